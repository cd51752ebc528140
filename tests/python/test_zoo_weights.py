"""The zoo's shared configuration and seeded weights."""
import numpy as np
import pytest

from zoo.configs import CONFIGS, MODELS, TOKEN_MODELS, config, seed
from zoo.weights import Weights


def test_all_19_models_have_tiny_and_bench_sizes():
    assert len(MODELS) == 19 and len(set(MODELS)) == 19
    assert set(CONFIGS) == set(MODELS)
    for model in MODELS:
        assert set(CONFIGS[model]) == {"tiny", "bench"}
    assert set(TOKEN_MODELS) <= set(MODELS)
    assert config("transformer_block", "bench") == {"seq": 64, "dim": 256, "heads": 4, "hidden": 1024}


def test_each_model_is_seeded_with_1234_plus_its_index():
    assert [seed(m) for m in MODELS] == list(range(1234, 1234 + 19))
    with pytest.raises(KeyError, match="unknown zoo model"):
        config("resnet")


def test_the_same_requests_give_identical_float32_weights_and_models_differ():
    def draw(model):
        w = Weights(model)
        return [w.linear("fc", 12, 16)[0], w.conv("conv", 1, 3, 3)[0], w.norm("ln", 8)[0], w.embedding("tok", 11, 8)]

    first, again, other = draw("mlp"), draw("mlp"), draw("cnn")
    for a, b in zip(first, again):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


def test_drawn_records_each_parameter_once_as_used():
    w = Weights("vit")
    scale, _ = w.norm("ln", 4)
    assert np.array_equal(w.drawn["ln.weight"], scale)
    with pytest.raises(KeyError, match="drawn twice"):
        w.norm("ln", 4)


def test_recurrent_decay_and_adjacency_parameters():
    w = Weights("lstm")
    w_ih, w_hh, b_ih, b_hh = w.recurrent("lstm", 3, 4, gates=4)
    assert (w_ih.shape, w_hh.shape, b_ih.shape, b_hh.shape) == ((16, 3), (16, 4), (16,), (16,))
    decay = Weights("ssm").decay("A", 64)
    assert decay.dtype == np.float32 and np.all((decay > 0) & (decay < 1))
    adjacency = Weights("gcn").adjacency("adjacency", 6)
    np.testing.assert_array_equal(adjacency, adjacency.T)
    assert np.all(np.diag(adjacency) > 0)
    # D^-1/2 (A + I) D^-1/2: its largest eigenvalue is exactly 1
    assert abs(np.linalg.eigvalsh(adjacency.astype(np.float64)).max() - 1) < 1e-6
    with pytest.raises(KeyError, match="drawn twice"):
        w.decay("lstm.weight_ih", 2)
