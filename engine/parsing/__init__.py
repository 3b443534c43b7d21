"""What a model writes, split into parts: answer text, reasoning, tool calls (Qt-free).

formats      the frozen description of one model's markers (shared with the call grammars)
detect       that description found from the chat template and the vocabulary, never a model's name
prompt       a turn's prompt with tools and template options (a fallback prompt where the template
             has no tools), and the TurnSetup its parser needs
stream       the streaming parser for inline markers (<think>, <tool_call>, [TOOL_CALLS], JSON calls),
             with call_modes and json_call reading the calls; harmony for gpt-oss's channels
call_grammar tool calls constrained to the model's own format (tool_choice required / named / auto)
"""
