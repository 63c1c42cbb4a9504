"""QuestionLM.save_delta / load_delta: a fine-tuned encoder's top layers ship as a float16
change from the pip-installed MiniLM (the pretrained walk's encoder, docs/design/taimr.md)."""

import torch

from lokg.nn.question_encoder import QuestionLM


def test_delta_round_trip_restores_the_trained_layers_and_is_small(tmp_path):
    trained = QuestionLM(trainable_layers=2)
    torch.manual_seed(0)
    with torch.no_grad():  # "training": every trainable weight moves by ~1e-2
        for p in trained.lm.encoder.layer[-2:].parameters():
            p.add_(1e-2 * torch.randn_like(p))
    path = tmp_path / "delta.pt"
    trained.save_delta(path)
    # two of MiniLM's six layers in float16: ~3.5M numbers, ~7 MB (the whole model is ~90 MB)
    assert path.stat().st_size < 8 * 2**20

    loaded = QuestionLM()
    loaded.load_delta(path)
    for mine, theirs in zip(trained.lm.parameters(), loaded.lm.parameters(), strict=True):
        # float16 keeps ~11 bits of each change of ~1e-2: an error of ~1e-5 at most
        assert torch.allclose(mine, theirs, atol=5e-5, rtol=0)
    trained.eval(), loaded.eval()
    a, b = trained.encode(["who directed alien"])[0], loaded.encode(["who directed alien"])[0]
    assert torch.allclose(a, b, atol=1e-4)


def test_delta_of_an_untrained_encoder_is_zero(tmp_path):
    lm = QuestionLM(trainable_layers=1)
    lm.save_delta(tmp_path / "d.pt")
    blob = torch.load(tmp_path / "d.pt", weights_only=True)
    assert list(blob["layers"]) == [5]  # the top layer of six only
    assert all(float(d.abs().max()) == 0.0 for d in blob["layers"][5].values())
