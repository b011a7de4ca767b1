from indexcore.cli.main import main

raise SystemExit(main())
