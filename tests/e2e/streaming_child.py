"""A program that streams a chat completion with the official openai SDK, from its environment.

Run by ``tests/e2e/test_llm_proxy.py`` as an agent command: ``OPENAI_BASE_URL``
is the trial's recording LLM proxy; the instruction comes on stdin.
"""

import sys

from openai import OpenAI

stream = OpenAI().chat.completions.create(
    model="stub-1", messages=[{"role": "user", "content": sys.stdin.read()}], stream=True
)
print("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))
