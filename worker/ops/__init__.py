"""The operations behind both the JSON API and the dashboard pages: plain async functions over
the container (validated input in, JSON-ready dicts out), so a page and an API client get the
same answer from the same code. Nothing here knows about HTTP requests or templates."""
