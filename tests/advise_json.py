"""advise's JSON as the Spark equality tests compare it: without the fields that time a run."""


def without_seconds(value):
    """advise's JSON without its ``*seconds`` fields (timings differ run to run)."""
    if isinstance(value, dict):
        return {k: without_seconds(v) for k, v in value.items() if not k.endswith("seconds")}
    if isinstance(value, list):
        return [without_seconds(v) for v in value]
    return value
