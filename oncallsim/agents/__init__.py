"""Agents take the pager: the surfaces through which a program (an AI agent over MCP, a scripted policy) plays the
same seeded incidents a person plays in the console, seeing only what a person sees (docs/agents.md)."""
