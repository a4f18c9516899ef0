"""The request-level engine: every request of every minute as a discrete event (REQUESTS.md)."""
