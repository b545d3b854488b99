"""The chaos benchmark's parts: the gateway and upstreams it runs, the load, the faults, the report."""
