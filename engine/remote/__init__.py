"""The remote backend: an OpenAI-compatible server (vLLM, llama-server, Ollama, another Hearth) answers.

It is not a token-level Runner: RemoteEngine (engine.py) stands where the
scheduler and runner stand in the engine loop, takes the same commands and
emits the same events. Each turn is one streaming chat completion (stream.py);
`check_server` (probe.py) is the Settings dialog's "Test connection" and the
loop's connect; what a failure means for a person is said in errors.py.
"""
