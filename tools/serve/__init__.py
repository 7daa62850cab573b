"""serve_sweep: a concurrency sweep of a real OpenAI-compatible server (continuous batching), its throughput knee and latency, cached."""
