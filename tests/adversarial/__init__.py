"""The gate against the agent it gates: each path an agent could take round a rule,
played as that agent would (its own MCP key over real HTTP against a real served app)."""
