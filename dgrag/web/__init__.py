"""The edge of the app: the shared state (service), the REST API, the Gradio UI, the server that
runs both on one port, and the graph picture. Nothing below imports from here."""
