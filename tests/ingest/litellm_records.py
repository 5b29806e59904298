"""LiteLLM_SpendLogs records as LiteLLM 1.110 writes them (proxy/spend_tracking/spend_tracking_utils.py,
`get_logging_payload`), for the tests of what its spend logs carry besides the totals:

- `metadata.additional_usage_values` is the response's `Usage` dumped without prompt/completion/total tokens; when
  prompt_tokens_details has cached_tokens (or cache_write_tokens / cache_creation_tokens) LiteLLM copies them to
  `cache_read_input_tokens` / `cache_creation_input_tokens` unless already there. `metadata.usage_object` is what
  the standard logging payload carried: often null.
- Usage shapes are LiteLLM's own transformations: OpenAI's usage passes through (prompt_tokens includes
  prompt_tokens_details.cached_tokens); Anthropic's (llms/anthropic/chat/transformation.py) and Bedrock
  Converse's (llms/bedrock/chat/converse_transformation.py) set prompt_tokens = uncached + cache reads + cache
  writes, `cache_read_input_tokens` / `cache_creation_input_tokens` at the top, and prompt_tokens_details
  {cached_tokens, cache_creation_tokens, text_tokens}.
- A response served from LiteLLM's cache: `cache_hit` is str(True) = "True", `spend` 0 (response_cost), the
  request_id gets `_cache_hit<time.time()>` appended, and the tokens are the cached response's usage.
"""

import datetime as dt

KEY_HASH = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"


def openai_usage(prompt: int, completion: int, cached: int) -> dict:
    return {
        "completion_tokens_details": {
            "accepted_prediction_tokens": 0,
            "audio_tokens": 0,
            "reasoning_tokens": 0,
            "rejected_prediction_tokens": 0,
            "text_tokens": None,
        },
        "prompt_tokens_details": {
            "audio_tokens": 0,
            "cached_tokens": cached,
            "text_tokens": None,
            "image_tokens": None,
        },
        **({"cache_read_input_tokens": cached} if cached else {}),
    }


def anthropic_usage(uncached: int, read: int, write: int) -> dict:
    """Also Bedrock Converse's: the same fields, from cacheReadInputTokens / cacheWriteInputTokens."""
    return {
        "completion_tokens_details": {"reasoning_tokens": 0, "text_tokens": None},
        "prompt_tokens_details": {
            "cached_tokens": read,
            "cache_creation_tokens": write,
            "text_tokens": uncached,
            "audio_tokens": None,
            "image_tokens": None,
        },
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "server_tool_use": None,
    }


def spend_log(
    n: int,
    *,
    start: dt.datetime,
    provider: str,
    model: str,
    prompt: int,
    completion: int,
    extra_usage: dict,
    spend: float = 0.0021,
    cache_hit: bool = False,
    key_alias: str = "support-bot",
) -> dict:
    request_id = f"chatcmpl-{provider}-{n:05d}" + (f"_cache_hit{1781430000.0 + n}" if cache_hit else "")
    end = start + dt.timedelta(milliseconds=40 if cache_hit else 1400)
    return {
        "request_id": request_id,
        "call_type": "acompletion",
        "api_key": KEY_HASH,
        "spend": 0.0 if cache_hit else spend,
        "total_tokens": prompt + completion,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "startTime": start.strftime("%Y-%m-%dT%H:%M:%S.%f"),
        "endTime": end.strftime("%Y-%m-%dT%H:%M:%S.%f"),
        "completionStartTime": end.strftime("%Y-%m-%dT%H:%M:%S.%f"),
        "model": model,
        "model_id": "d41f",
        "model_group": model,
        "custom_llm_provider": provider,
        "api_base": "",
        "user": "",
        "cache_hit": str(cache_hit),
        "cache_key": "Cache OFF" if not cache_hit else "a1b2",
        "request_tags": [],
        "team_id": "support",
        "organization_id": "",
        "end_user": "",
        "requester_ip_address": "",
        "session_id": f"s-{n}",
        "status": "success",
        "mcp_namespaced_tool_name": None,
        "agent_id": None,
        "litellm_call_id": f"call-{n}",
        "request_duration_ms": 40 if cache_hit else 1400,
        "metadata": {
            "user_api_key": KEY_HASH,
            "user_api_key_alias": key_alias,
            "user_api_key_team_id": "support",
            "user_api_key_team_alias": "Support Platform",
            "user_api_key_user_id": None,
            "spend_logs_metadata": None,
            "status": "success",
            "error_information": None,
            "usage_object": None,
            "additional_usage_values": extra_usage,
            "applied_guardrails": None,
            "litellm_overhead_time_ms": 1.8,
        },
    }
