"""The kinds of endpoint the console offers, each with its usual base URL and example model names."""
from __future__ import annotations

from dataclasses import dataclass

from django.db import models
from django.utils.translation import gettext_lazy as _


class EndpointKind(models.TextChoices):
    DEEPSEEK = "deepseek", "DeepSeek"
    QWEN = "qwen", _("Qwen (Alibaba Cloud DashScope)")
    ZHIPU = "zhipu", _("Zhipu GLM (BigModel)")
    MOONSHOT = "moonshot", _("Moonshot (Kimi)")
    OLLAMA = "ollama", "Ollama"
    VLLM = "vllm", "vLLM"
    OTHER = "other", _("Other OpenAI-compatible")


@dataclass(frozen=True)
class Preset:
    base_url: str
    """The OpenAI-compatible base URL the service documents ("" for other)."""
    examples: tuple[str, ...]
    """Model names to suggest in the form (the service's own names; the staff type the ones they use)."""
    needs_key: bool = True


PRESETS: dict[str, Preset] = {
    EndpointKind.DEEPSEEK: Preset("https://api.deepseek.com/v1", ("deepseek-chat", "deepseek-reasoner")),
    EndpointKind.QWEN: Preset("https://dashscope.aliyuncs.com/compatible-mode/v1", ("qwen-plus", "qwen-max", "qwen-turbo")),
    EndpointKind.ZHIPU: Preset("https://open.bigmodel.cn/api/paas/v4", ("glm-4-plus", "glm-4-flash")),
    EndpointKind.MOONSHOT: Preset("https://api.moonshot.cn/v1", ("moonshot-v1-8k", "moonshot-v1-32k")),
    # Local servers: Ollama's OpenAI-compatible API on its default port; vLLM's `vllm serve` on its own.
    EndpointKind.OLLAMA: Preset("http://127.0.0.1:11434/v1", ("qwen2.5:7b",), needs_key=False),
    EndpointKind.VLLM: Preset("http://127.0.0.1:8000/v1", ("Qwen/Qwen2.5-7B-Instruct",), needs_key=False),
    EndpointKind.OTHER: Preset("", ()),
}


def preset_for(kind: str) -> Preset:
    return PRESETS.get(kind, PRESETS[EndpointKind.OTHER])
