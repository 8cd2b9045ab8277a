"""Helpers for the reward-model tests (tests/rm and tests/tools/test_model.py)."""

from __future__ import annotations

from pathlib import Path


def make_tiny_backbone(path: Path, seed: int = 0) -> Path:
    """Save a 2-layer, 32-wide BERT with MiniLM's tokenizer to `path`."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from rewardsmith.models.loading import minilm_dir

    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


#: Special tokens of the tiny decoder, as in SmolLM2: pad/unk, then the ChatML markers.
DECODER_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def make_tiny_decoder(path: Path, seed: int = 0) -> Path:
    """Save a 2-layer, 32-wide Llama with a byte-level BPE tokenizer that has SmolLM2's
    ChatML special tokens (ids 0-2), trained in memory on a few arithmetic stories."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from rewardsmith.rl import problems as P

    tok = Tokenizer(models.BPE(unk_token="<|endoftext|>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    texts = [p.prompt + p.completion for p in P.generate(300, seed, "sft")]
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=list(DECODER_SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|im_end|>",  # as SmolLM2 ships it: the RM must not keep it
    )
    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


_BLOCKER = """
import importlib.abc, sys
class _NoRewardsmith(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "rewardsmith" or name.startswith("rewardsmith."):
            raise ImportError("rewardsmith is not importable in this process")
        return None
sys.meta_path.insert(0, _NoRewardsmith())
"""


def run_without_rewardsmith(code: str, tmp_path: Path, timeout: float = 300) -> str:
    """Run `code` in a fresh Python where `rewardsmith` cannot be imported (as a trainer's
    process would be); returns its stdout, raises with its stderr when it fails."""
    import subprocess
    import sys

    script = tmp_path / "no_rewardsmith.py"
    script.write_text(_BLOCKER + "\n" + code, encoding="utf-8")
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout
