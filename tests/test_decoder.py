"""The shipped texts, the character vocabulary, the decoder's batches, its sampling loop and its checkpoints."""

import math
import re

import pytest
import torch

import qkv
from qkv import corpora
from qkv.decoder import lm_batch, load_decoder, next_char_loss, sample


def small_model(vocab_size=7, num_layers=2, max_len=12, seed=0):
    torch.manual_seed(seed)
    return qkv.TinyTransformer(vocab_size, d_model=16, num_heads=2, num_layers=num_layers, max_len=max_len).eval()


def test_the_sonnets_are_154_sonnets_of_14_lines_or_so():
    sonnets = corpora.read_text("sonnets").strip().split("\n\n")
    assert len(sonnets) == 154
    lengths = [len(s.splitlines()) for s in sonnets]
    assert lengths.count(14) >= 150  # 99 has 15 lines, 126 has 12, 145 is in tetrameter
    assert sonnets[17].startswith("Shall I compare thee to a summer's day?")


def test_the_tang_quatrains_are_four_lines_of_five_or_seven_simplified_characters():
    poems = corpora.read_text("tang").splitlines()
    assert len(poems) == 1175
    five, seven = re.compile(r"^(\w{5}[，。]){4}$"), re.compile(r"^(\w{7}[，。]){4}$")
    assert all(five.match(p) or seven.match(p) for p in poems)
    text = "".join(poems)
    assert "国" in text and "國" not in text and "风" in text and "風" not in text  # simplified, not traditional


def test_the_cjk_font_draws_every_character_of_the_quatrains():
    from fontTools.ttLib import TTFont

    from qkv import figures

    cmap = TTFont(figures.CJK_FONT).getBestCmap()
    missing = {c for c in corpora.read_text("tang") if c != "\n" and ord(c) not in cmap}
    assert not missing, f"run tools/i18n.py diagrams: the font lacks {''.join(sorted(missing))}"


def test_char_vocab_round_trips_and_refuses_unknown_characters():
    text = corpora.read_text("sonnets")
    vocab = corpora.CharVocab(text)
    ids = vocab.encode(text[:500])
    assert ids.dtype == torch.long and vocab.decode(ids) == text[:500]
    assert vocab.chars == sorted(vocab.chars) and len(vocab) == len(set(text))
    with pytest.raises(ValueError, match=r"text must be characters of the vocabulary; got '\$%'"):
        vocab.encode("a$%")
    with pytest.raises(ValueError, match=r"ids must be ids in \[0, 3\)"):
        corpora.CharVocab("abc").decode([0, 3])
    with pytest.raises(ValueError, match=r"name must be 'sonnets' or 'tang'; got 'plays'"):
        corpora.read_text("plays")


def test_lm_batch_targets_are_the_next_characters_of_the_text():
    ids = torch.arange(100) * 3  # distinct ids: a window's place in the text is known from its first id
    x, y = lm_batch(ids, 8, 10, generator=torch.Generator().manual_seed(1))
    assert x.shape == y.shape == (8, 10)
    starts = x[:, 0] // 3
    expected = ids[starts[:, None] + torch.arange(11)]  # (8, 11)
    assert torch.equal(x, expected[:, :-1]) and torch.equal(y, expected[:, 1:])
    with pytest.raises(ValueError, match=r"ids must be more than seq_len=10 ids"):
        lm_batch(torch.arange(10), 2, 10)


def test_next_char_loss_cannot_see_the_future():
    model = small_model()
    x = torch.randint(7, (2, 10), generator=torch.Generator().manual_seed(0))
    y = torch.roll(x, -1, dims=1)
    loss = next_char_loss(model, x, y)
    assert abs(loss.item() - math.log(7)) < 1.0  # an untrained model: about log V
    changed = x.clone()
    changed[:, 6:] = (x[:, 6:] + 1) % 7  # the future of position 5
    mask = qkv.causal_mask(10)
    with torch.no_grad():
        before, after = model(x, mask=mask)[0], model(changed, mask=mask)[0]
    assert torch.allclose(before[:, :6], after[:, :6], atol=1e-6)
    assert not torch.allclose(before[:, 6:], after[:, 6:], atol=1e-3)


def test_greedy_sampling_picks_the_most_likely_next_token_at_every_step():
    model = small_model()
    ids = sample(model, torch.tensor([1, 4, 2]), 8, temperature=0)
    assert ids.shape == (11,) and ids[:3].tolist() == [1, 4, 2]
    with torch.no_grad():  # one run over the whole result: under the causal mask, the same scores as step by step
        logits = model(ids[None], mask=qkv.causal_mask(11))[0][0]  # (11, V)
    assert torch.equal(logits[2:-1].argmax(-1), ids[3:])


def test_sampling_draws_from_the_softmax_of_the_scores_over_the_temperature():
    model = small_model(num_layers=1)
    prompt = torch.tensor([3, 1])
    draws = [
        sample(model, prompt, 1, temperature=2.0, generator=torch.Generator().manual_seed(s))[-1] for s in range(2000)
    ]
    counts = torch.bincount(torch.stack(draws), minlength=7).double() / 2000
    with torch.no_grad():
        scores = model(prompt[None], mask=qkv.causal_mask(2))[0][0, -1].double()
    expected = torch.softmax(scores / 2.0, -1)
    assert (counts - expected).abs().max() < 0.04  # 2,000 seeded draws: the standard error is below 0.012
    again = sample(model, prompt, 20, 1.0, generator=torch.Generator().manual_seed(5))
    assert torch.equal(again, sample(model, prompt, 20, 1.0, generator=torch.Generator().manual_seed(5)))


def test_sampling_keeps_only_the_last_max_len_tokens_as_context():
    model = small_model(max_len=6)
    prompt = torch.arange(7) % 7  # longer than max_len
    ids = sample(model, prompt, 5, temperature=0)
    assert ids.shape == (12,)
    with torch.no_grad():
        last = model(ids[-7:-1][None], mask=qkv.causal_mask(6))[0][0, -1]
    assert ids[-1] == last.argmax()
    with pytest.raises(ValueError, match=r"temperature must be a number >= 0; got -1"):
        sample(model, prompt, 1, temperature=-1)


@pytest.mark.parametrize("name", corpora.CORPORA)
def test_the_shipped_decoders_were_trained_on_the_shipped_texts(name):
    model, vocab, meta = load_decoder(name)
    text = corpora.read_text(name)
    assert vocab.chars == corpora.CharVocab(text).chars
    assert meta["steps"] >= 1000 and len(meta["losses_every_10"]) == meta["steps"] // 10
    torch.manual_seed(0)
    x, y = lm_batch(vocab.encode(text), 16, meta["seq_len"], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        loss = next_char_loss(model, x, y).item()
    assert loss < 0.5 * math.log(len(vocab)), f"{name}: loss {loss:.2f} nats, log V = {math.log(len(vocab)):.2f}"
