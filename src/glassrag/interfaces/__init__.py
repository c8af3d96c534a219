"""The CLI, HTTP API (with the web page) and MCP server over the Python API."""
