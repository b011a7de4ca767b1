from indexcore.cli.main import main

if __name__ == "__main__":  # not when a spawned worker process imports it
    raise SystemExit(main())
