"""Developer tools: the parser conformance harness."""
