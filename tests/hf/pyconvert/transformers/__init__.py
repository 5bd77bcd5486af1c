# Stand-in for Hugging Face transformers, which Debian does not package: convert_hf_to_gguf.py
# then reads config.json itself (its documented fallback when AutoConfig fails). SentencePiece
# vocabularies never reach AutoTokenizer; anything that does fails loudly here.
class AutoConfig:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        raise OSError("transformers stub: read config.json instead")


class AutoTokenizer:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        raise OSError("transformers stub: AutoTokenizer is not available")
