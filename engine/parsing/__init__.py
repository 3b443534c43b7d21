"""What a model writes, split into parts: answer text, reasoning, tool calls (Qt-free).

`formats` says how one model marks its parts (found from its chat template and vocabulary by
`detect`); `stream` splits a turn's text into parts as it arrives.
"""
