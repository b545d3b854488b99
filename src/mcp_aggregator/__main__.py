from mcp_aggregator.cli import main

main()
