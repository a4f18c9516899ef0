"""A chain of services in the request engine: a graph of services (each its own workers, work, timeouts, and
policy on the calls it makes), simulated request by request as one compiled event loop (issue 24,
docs/graphs.md)."""
