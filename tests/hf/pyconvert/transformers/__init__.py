# Stand-in for Hugging Face transformers, which Debian does not package: convert_hf_to_gguf.py
# then reads config.json itself (its documented fallback when AutoConfig fails). SentencePiece
# vocabularies never reach AutoTokenizer. For tokenizer.json BPE vocabularies AutoTokenizer gives
# the little the converter's get_vocab_base uses: vocab, get_added_vocab, added_tokens_decoder,
# encode (added tokens split out, NFC, the Split regex through the `regex` module, byte-level BPE,
# the post-processor's template) and decode. Its encode is checked by the converter itself: a
# wrong id anywhere in the check text gives a hash that is not in its table, and it refuses.
import json
import unicodedata

import regex


class AutoConfig:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        raise OSError("transformers stub: read config.json instead")


def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class _Added:
    def __init__(self, entry):
        self.content = entry["content"]
        self.special = entry.get("special", False)
        self.normalized = entry.get("normalized", True)


class _BpeTokenizer:
    def __init__(self, tj):
        model = tj["model"]
        if model.get("type") != "BPE":
            raise OSError("transformers stub: only BPE tokenizer.json is implemented")
        self.vocab = dict(model["vocab"])
        added = tj.get("added_tokens") or []
        for a in added:
            self.vocab[a["content"]] = a["id"]
        self.added_tokens_decoder = {a["id"]: _Added(a) for a in added}
        self._added = sorted((a["content"] for a in added), key=len, reverse=True)
        merges = [m.split(" ", 1) if isinstance(m, str) else m for m in model.get("merges", [])]
        self._ranks = {tuple(m): i for i, m in enumerate(merges)}
        self._ignore_merges = model.get("ignore_merges", False)
        self._byte = _bytes_to_unicode()
        self._unbyte = {c: b for b, c in self._byte.items()}
        self._id_to_token = {i: t for t, i in self.vocab.items()}
        norm = tj.get("normalizer")
        self._nfc = bool(norm) and norm.get("type") == "NFC"
        if norm and not self._nfc:
            raise OSError("transformers stub: only the NFC normalizer is implemented")
        pre = tj.get("pre_tokenizer") or {}
        parts = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
        self._split = None
        for p in parts:
            # An isolated Split, or one that removes what its regex does not match (invert): the
            # same pieces, these regexes matching every character. ByteLevel's own regex (GPT-2's)
            # when use_regex.
            if p.get("type") == "Split":
                isolated = p.get("behavior") == "Isolated" and not p.get("invert")
                if not isolated and not (p.get("behavior") == "Removed" and p.get("invert")):
                    raise OSError("transformers stub: only an isolated or inverted removing Split is implemented")
                self._split = regex.compile(p["pattern"]["Regex"])
            elif p.get("type") == "ByteLevel" and p.get("use_regex") and not p.get("add_prefix_space"):
                self._split = regex.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
            elif p.get("type") != "ByteLevel" or p.get("add_prefix_space") or p.get("use_regex"):
                raise OSError("transformers stub: pre-tokenizer %r is not implemented" % p.get("type"))
        if self._split is None:
            raise OSError("transformers stub: no Split pre-tokenizer")
        self._prefix, self._suffix = [], []
        post = tj.get("post_processor") or {}
        for p in post.get("processors", [post]):
            if p.get("type") != "TemplateProcessing":
                continue
            after = False
            for item in p["single"]:
                if "Sequence" in item:
                    after = True
                    continue
                ids = p["special_tokens"][item["SpecialToken"]["id"]]["ids"]
                (self._suffix if after else self._prefix).extend(ids)

    def get_added_vocab(self):
        return {a.content: i for i, a in self.added_tokens_decoder.items()}

    def _bpe(self, word):
        if self._ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        syms = list(word)
        while len(syms) > 1:
            pairs = [(self._ranks.get((syms[i], syms[i + 1])), i) for i in range(len(syms) - 1)]
            pairs = [p for p in pairs if p[0] is not None]
            if not pairs:
                break
            _, i = min(pairs)
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        return [self.vocab[s] for s in syms]

    def _encode_raw(self, text):
        if self._nfc:
            text = unicodedata.normalize("NFC", text)
        ids = []
        for m in self._split.finditer(text):
            word = "".join(self._byte[b] for b in m.group(0).encode("utf-8"))
            ids.extend(self._bpe(word))
        return ids

    def encode(self, text, add_special_tokens=True):
        ids = []
        pieces = [text]
        for tok in self._added:  # split out added tokens, longest first
            nxt = []
            for p in pieces:
                if isinstance(p, int):
                    nxt.append(p)
                    continue
                for k, part in enumerate(p.split(tok)):
                    if k:
                        nxt.append(self.vocab[tok])
                    if part:
                        nxt.append(part)
            pieces = nxt
        for p in pieces:
            ids.extend([p] if isinstance(p, int) else self._encode_raw(p))
        return self._prefix + ids + self._suffix if add_special_tokens else ids

    def decode(self, ids):
        out = ""
        for i in ids:
            t = self._id_to_token[i]
            if i in self.added_tokens_decoder:
                out += t
            else:
                out += bytes(self._unbyte[c] for c in t).decode("utf-8", errors="replace")
        return out


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path, *args, **kwargs):
        try:
            with open(f"{path}/tokenizer.json", encoding="utf-8") as f:
                tj = json.load(f)
        except FileNotFoundError:
            raise OSError("transformers stub: no tokenizer.json")
        return _BpeTokenizer(tj)
