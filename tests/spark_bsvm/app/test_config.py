"""Job configs: the shipped files load, overrides apply, bad configs fail with messages that say the fix."""

import glob
from pathlib import Path

import pytest

from spark_bsvm.app import loaders
from spark_bsvm.app.config import SOURCES, ConfigError, describe, load_config
from spark_bsvm.app.methods import METHODS, build_estimator, method_params, warm_started

CONF = Path(__file__).resolve().parents[3] / "conf"


@pytest.mark.parametrize("path", sorted(glob.glob(str(CONF / "*.toml"))))
def test_shipped_configs_are_valid_and_build_the_estimator_of_each_method_they_tune(path):
    config = load_config(path, require=())
    params = config["model"]["params"]
    tuned = {config["model"]["method"]} | {key for key, value in params.items() if isinstance(value, dict)}
    for method in tuned:
        estimator = build_estimator(method, params)
        for key, value in method_params(method, params).items():
            assert estimator.getOrDefault(key) == value


def write(tmp_path, text):
    path = tmp_path / "c.toml"
    path.write_text(text)
    return str(path)


BASE = '[data]\nsource = "generated"\n[model]\nmethod = "budget_l1"\n[model.params]\nbudget = 50\n'


def test_defaults_are_filled_in(tmp_path):
    config = load_config(write(tmp_path, BASE))
    assert config["data"]["test_fraction"] == 0.25 and config["data"]["scale"] == "none"
    assert config["output"] == {"model": None, "report": None, "plot": None, "plot_rows": 20000}
    assert "retrain" not in config  # it has a required key, so it is not defaulted


def test_overrides_parse_toml_values_and_bare_strings(tmp_path):
    config = load_config(write(tmp_path, BASE), ["model.params.C=0.5", "model.params.budget=500",
                                                 "data.deduplicate=true", "data.path=/data/x y.csv",
                                                 'data.positive_label="normal."', "output.report=r.json"])
    assert config["model"]["params"] == {"budget": 500, "C": 0.5}
    assert config["data"]["deduplicate"] is True and config["data"]["path"] == "/data/x y.csv"
    assert config["data"]["positive_label"] == "normal." and config["output"]["report"] == "r.json"


def test_an_override_of_a_text_key_keeps_a_date_or_number_as_written(tmp_path):
    """Airflow's {{ ds }} as a path (--set data.path=2026-12-01) is a TOML date: it was refused as the wrong type."""
    config = load_config(write(tmp_path, BASE), ["data.path=2026-12-01", "output.model=20261201", "data.seed=7",
                                                 "data.label_column=2"])
    assert config["data"]["path"] == "2026-12-01" and config["output"]["model"] == "20261201"
    assert config["data"]["seed"] == 7 and config["data"]["label_column"] == 2  # numbers where numbers are meant


@pytest.mark.parametrize("text, overrides, message", [
    (BASE, ["data.sourc=csv"], r"unknown key\(s\) \['sourc'\] in \[data\]; known keys: .*'source'"),
    (BASE, ["outputs.model=x"], r"unknown section\(s\) \['outputs'\]; the sections are"),
    (BASE, ["data.test_fraction=1.5"], r"test_fraction must be in \(0, 1\), got 1.5"),
    (BASE, ["data.seed=true"], r"\[data\] seed = True has the wrong type; expected int"),
    (BASE, ["data.deduplicate=3"], r"deduplicate = 3 has the wrong type; expected bool"),
    (BASE, ["data.source=parqet"], r"\[data\] source 'parqet' is unknown; use one of \['csv', 'forest_synthetic'"),
    (BASE, ["data.scale=log"], r"scale must be none, minmax or standard, got 'log'"),
    (BASE, ["data.source=csv", "data.label_column=label"], r"\[data\] label_column = 'label' names a column, and csv "
                                                           r"files are read without a header line: give the label's "
                                                           r"position \(0 = first, -1 = last\)"),
    (BASE, ["data.separator= "], r"\[data\] separator is empty; give a space or a tab quoted, as TOML reads it: "
                                 r"--set 'data.separator=\" \"' or --set 'data.separator=\"\\t\"'"),
    (BASE, ["output.plot_rows=0"], r"\[output\] plot_rows must be >= 1, got 0"),
    (BASE, ["data.test_path=t.csv"], r"test_path = 't.csv' names a file to read, and source 'generated' generates "
                                     r"its rows \(test_fraction holds out the test part\)"),
    (BASE, ["model"], r"override 'model' must look like section.key=value"),
    (BASE, ["data.source.x=1"], r"'source' is a value, not a section"),
    ('[data]\nsource = "csv"\n', [], r"section \[model\] is missing; it needs \['method'\]"),
    ('[data]\n[model]\nmethod = "csvc"\n', [], r"\[data\] source is required"),
    ('[data\nsource=1', [], r"is not valid TOML"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None)
def test_bad_configs_name_the_problem(tmp_path, text, overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text), overrides)


def test_a_missing_config_file_says_where_configs_are(tmp_path):
    with pytest.raises(ConfigError, match=r"not found; pass --config with a file from conf/"):
        load_config(str(tmp_path / "nope.toml"))


def test_a_config_path_that_is_a_folder_is_a_config_error_not_a_traceback(tmp_path):
    """--config conf (the folder): open() raised IsADirectoryError, which the jobs printed as a traceback, exit 1."""
    with pytest.raises(ConfigError, match=r"config file .* cannot be read \(Is a directory\); pass --config with a "
                                          r"TOML file from conf/"):
        load_config(str(tmp_path))


def test_retrain_needs_a_registry_and_a_margin_of_zero_or_more(tmp_path):
    with pytest.raises(ConfigError, match=r"\[retrain\] registry is required"):
        load_config(write(tmp_path, BASE + "[retrain]\nmargin = 0.01\n"))
    with pytest.raises(ConfigError, match=r"\[retrain\] margin must be >= 0, got -0.1"):
        load_config(write(tmp_path, BASE + '[retrain]\nregistry = "r"\nmargin = -0.1\n'))


@pytest.mark.parametrize("key, code, read", [("kept_exit_code", 256, 0), ("locked_exit_code", -1, 255)])
def test_retrain_exit_codes_are_refused_outside_what_a_shell_sees(tmp_path, key, code, read):
    """sys.exit(256) ends a process with status 0: a kept challenger or a busy registry read as success."""
    with pytest.raises(ConfigError, match=rf"\[retrain\] {key} must be an exit code from 0 to 255, got {code} "
                                          rf"\(a scheduler would read {read}\)"):
        load_config(write(tmp_path, BASE + f'[retrain]\nregistry = "r"\n{key} = {code}\n'))


@pytest.mark.parametrize("method, params, message", [
    ("budget_l3", {}, r"unknown method 'budget_l3'; \[model\] method must be one of \['budget_l1'"),
    ("budget_l1", {"norm": "l2"}, r"\['norm'\] are fixed by method 'budget_l1'"),
    ("csvc", {"budget": 5}, r"\['budget'\] are not params of CSVC \(method 'csvc'\): "
                            r".*\(budget_l1, budget_l2, ebsvm\); its params are"),
    ("csvc", {"C": "lots"}, r"C = 'lots' is not accepted by CSVC"),
])
def test_bad_method_params_name_the_problem(method, params, message):
    with pytest.raises(ValueError, match=message):
        build_estimator(method, params)


def test_a_method_table_applies_to_its_method_only_and_overrides_reach_into_it(tmp_path):
    text = ('[data]\nsource = "generated"\n[model]\nmethod = "budget_l1"\n[model.params]\ngamma = 1.0\n'
            '[model.params.budget_l1]\nbudget = 50\nC = 0.2\n[model.params.spsvm]\nmaxBasis = 500\n')
    config = load_config(write(tmp_path, text), ["model.params.spsvm.maxBasis=400", "model.params.gamma=2.0"])
    params = config["model"]["params"]
    assert method_params("budget_l1", params) == {"gamma": 2.0, "budget": 50, "C": 0.2}
    assert method_params("spsvm", params) == {"gamma": 2.0, "maxBasis": 400}
    assert method_params("csvc", params) == {"gamma": 2.0}
    spsvm = build_estimator("spsvm", params)
    assert (spsvm.getMaxBasis(), spsvm.getGamma()) == (400, 2.0)


def test_an_override_of_a_plain_param_that_the_methods_table_sets_is_refused_with_the_key_to_set(tmp_path):
    """--set model.params.maxBasis=50 on the quick start's config trained with its [model.params.spsvm] maxBasis
    = 200: the method's table wins, and the override was dropped without a word."""
    text = ('[data]\nsource = "generated"\n[model]\nmethod = "spsvm"\n[model.params]\ngamma = 1.0\n'
            '[model.params.spsvm]\nmaxBasis = 200\n[model.params.budget_l1]\nbudget = 50\n')
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=r"--set model.params.maxBasis=50 would change nothing: "
                                          r"\[model.params.spsvm\] maxBasis = 200 in .*c.toml is what method 'spsvm' "
                                          r"uses; set that one instead: --set model.params.spsvm.maxBasis=50"):
        load_config(path, ["model.params.maxBasis=50"])
    switched = load_config(path, ["model.method=budget_l1", "model.params.maxBasis=50"])  # not budget_l1's key
    assert method_params("budget_l1", switched["model"]["params"]) == {"gamma": 1.0, "maxBasis": 50, "budget": 50}
    assert method_params("spsvm", load_config(path, ["model.params.gamma=2.0"])["model"]["params"]) == \
        {"gamma": 2.0, "maxBasis": 200}


def test_plain_keys_go_to_every_method_and_stray_tables_are_refused():
    with pytest.raises(ValueError, match=r"\['C', 'budget'\] are not params of SpSVM"):
        build_estimator("spsvm", {"budget": 50, "C": 0.2})  # method-only params belong in its table
    with pytest.raises(ValueError, match=r"\[model.params.sp_svm\] is not a method; .* named after it: \['budget_l1'"):
        method_params("budget_l1", {"sp_svm": {"maxBasis": 5}})


def test_a_plain_param_another_method_takes_is_refused_with_the_table_to_move_it_to():
    """--set model.method=slant on the quick start's config: its plain gamma (the kernel of every other method;
    the slant sparsifier's is its reference's) was refused with no word of where it could go."""
    with pytest.raises(ValueError, match=r"\['gamma'\] are not params of SlantSparsifier \(method 'slant'\): "
                                         r"\['gamma'\] in the plain \[model.params\] go to every method; move them "
                                         r"into \[model.params.<method>\] tables of the methods that take them "
                                         r"\(budget_l1, budget_l2, csvc, ebsvm, l0svm, spsvm\); its params are"):
        build_estimator("slant", {"gamma": 0.05, "spsvm": {"maxBasis": 200}})
    with pytest.raises(ValueError, match=r"\['maxBasiss'\] are not params of SpSVM \(method 'spsvm'\); its params"):
        build_estimator("spsvm", {"maxBasiss": 200})  # a param of no method: a typo, no table to move it to


def test_method_table_fixes_the_norm_and_sets_columns():
    est = build_estimator("budget_l2", {"budget": 9, "gamma": 0.5}, features_col="f2")
    assert (est.getOrDefault("norm"), est.getOrDefault("budget"), est.getGamma()) == ("l2", 9, 0.5)
    assert est.getFeaturesCol() == "f2" and isinstance(est, METHODS["budget_l2"].estimator)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_of_the_table_builds_its_estimator_with_columns(method):
    est = build_estimator(method, {"seed": 3}, features_col="f2", label_col="l2")
    assert isinstance(est, METHODS[method].estimator)
    assert (est.getFeaturesCol(), est.getLabelCol(), est.getOrDefault("seed")) == ("f2", "l2", 3)


def test_warm_start_without_a_hook_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"cannot start from a support set .* set warm_start = false"):
        warm_started("budget_l1", build_estimator("budget_l1", {}), model_path="registry/v1/model")


def test_help_lists_every_config_key():
    text = describe()
    for key in ("source", "label_column", "positive_label", "deduplicate", "margin", "kept_exit_code", "plot"):
        assert f"    {key} (" in text


def test_the_config_s_sources_are_the_loaders():
    assert sorted(SOURCES) == sorted(loaders.SOURCES)
