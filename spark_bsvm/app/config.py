"""Job configuration: TOML files from ``conf/``, ``--set key=value`` overrides, validation.

A config has four sections (every key, its type, default and meaning is in
``SCHEMA``; ``describe()`` prints them for the jobs' ``--help``):

    [data]     where the rows come from and how the test part is held out
    [model]    method = "budget_l1" (a name of ``spark_bsvm.app.methods.METHODS``);
               [model.params] holds that estimator's params by their Spark ML names
    [output]   where the model, the JSON report and the PNG plot go
    [retrain]  the registry and the promotion rule of ``jobs/retrain.py``

Every mistake (unknown section or key, wrong type, missing required key)
raises ``ConfigError`` naming the file, the key and the fix.
"""

import copy
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser from PyPI (declared in pyproject.toml)
    import tomli as tomllib


class ConfigError(ValueError):
    """A config file or override that cannot be used; the message says what to change."""


_ANY_NUMBER = (int, float)
# the [data] sources: the names of spark_bsvm.app.loaders.SOURCES, checked here before Spark starts
SOURCES = ("generated", "forest_synthetic", "libsvm", "csv", "kddcup99", "parquet")

# section -> key -> (accepted types, default (None: optional, REQUIRED: must be given), meaning)
REQUIRED = object()
SCHEMA = {
    "data": {
        "source": (str, REQUIRED, " | ".join(SOURCES)),
        "path": (str, None, "input file or folder (any Spark path: local, hdfs://, s3a://); "
                            "for forest_synthetic, where the generated Parquet is written once"),
        "test_path": (str, None, "a separate test file in the same format (default: hold out test_fraction)"),
        "test_fraction": (_ANY_NUMBER, 0.25, "share of the rows held out for testing, by seed (in (0, 1))"),
        "seed": (int, 0, "seed of the train/test split and of generated data"),
        "rows": (int, None, "rows to generate (generated: 9000; forest_synthetic: 522910)"),
        "features": (int, 10, "generated: number of features"),
        "noise": (_ANY_NUMBER, 0.05, "generated / forest_synthetic: share of flipped labels"),
        "num_features": (int, None, "libsvm: number of features (default: Spark infers it from the file)"),
        "label_column": ((int, str), -1, "csv: label position (0 = first, -1 = last); parquet: label column name"),
        "separator": (str, ",", "csv: field separator"),
        "positive_label": ((int, float, str), None,
                           "rows whose label equals this become 1.0, all others 0.0 (e.g. 2 for Forest's "
                           "class 2 vs rest, \"normal.\" for KDD Cup 99); unset: the file must have two labels"),
        "features_column": (str, None, "parquet: a vector column holding the features"),
        "feature_columns": (list, None, "parquet: numeric columns assembled into the features "
                                        "(default: every column except the label)"),
        "deduplicate": (bool, False, "drop duplicate rows before splitting (KDD Cup 99 is mostly duplicates)"),
        "scale": (str, "none", "none | minmax | standard: feature scaling fitted on the training part"),
    },
    "model": {
        "method": (str, REQUIRED, "training method: a name of spark_bsvm.app.methods.METHODS"),
        "params": (dict, {}, "the method's estimator params by their Spark ML names, e.g. budget, C, gamma; "
                             "a table [model.params.<method>] applies to that method only"),
    },
    "output": {
        "model": (str, None, "directory to save the fitted pipeline (features + model) to; a model saved "
                             "there before is replaced, a directory holding anything else refused"),
        "report": (str, None, "JSON report file (test error, support size, times, confusion counts)"),
        "plot": (str, None, "PNG of test error against support size (needs the 'plot' extra: matplotlib)"),
        "plot_rows": (int, 20000, "test rows sampled for the plot's pruned models"),
    },
    "retrain": {
        "registry": (str, REQUIRED, "registry directory (local or shared filesystem): versions/ and CURRENT"),
        "margin": (_ANY_NUMBER, 0.0, "promote when challenger error <= current error + margin"),
        "warm_start": (bool, False, "start the challenger from the current model's support set "
                                    "(methods with a warm-start hook in spark_bsvm.app.methods: spsvm)"),
        "kept_exit_code": (int, 3, "exit code (0-255) when the challenger is not promoted (0 for schedulers that "
                                   "treat any non-zero code as a failure)"),
        "lock_wait_minutes": (_ANY_NUMBER, 0, "how long to wait while another retraining holds the registry "
                                              "(0: give up at once; inf: until it ends)"),
        "locked_exit_code": (int, 4, "exit code (0-255) when another retraining held the registry throughout "
                                     "lock_wait_minutes (nothing was done)"),
    },
}
REQUIRED_SECTIONS = ("data", "model")
# the [data] sources that make their rows rather than read them from a path
GENERATED_SOURCES = ("generated", "forest_synthetic")


def load_config(path, overrides=(), require=REQUIRED_SECTIONS):
    """The validated config of TOML file ``path`` with ``overrides`` ("section.key=value") applied.

    Defaults are filled in; ``require`` lists the sections the calling job needs.
    """
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found; pass --config with a file from conf/") from None
    except OSError as exc:  # a folder (--config conf), a file without read permission
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror}); pass --config with a TOML file "
                          "from conf/") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    for item in overrides:
        apply_override(raw, item)
    for item in overrides:
        _check_not_shadowed(raw, item, path)
    return validate(raw, source=str(path), require=require)


def parse_value(text):
    """A TOML value (number, bool, "string", [list], date); bare words are taken as strings."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(raw, item):
    """Set ``section.key[.subkey]=value`` in the raw config dict (in place)."""
    name, sep, text = item.partition("=")
    parts = name.strip().split(".")
    if not sep or len(parts) < 2 or not all(parts):
        raise ConfigError(f"override {item!r} must look like section.key=value, e.g. model.params.C=10")
    node = raw
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {item!r}: {part!r} is a value, not a section")
    value = parse_value(text.strip())
    if not isinstance(value, str) and _takes_text_only(parts):
        value = text.strip()  # a name TOML reads as a date or a number: --set data.path=2026-12-01 (Airflow's ds)
    node[parts[-1]] = value


def _check_not_shadowed(raw, item, path):
    """A ConfigError when override ``item`` sets a plain ``model.params`` key that the configured method's own
    table ``[model.params.<method>]`` also sets: the method's table wins (``spark_bsvm.app.methods.method_params``),
    so the override would be dropped without a word."""
    name, _, text = item.partition("=")
    parts = name.strip().split(".")
    model = raw.get("model")
    if parts[:2] != ["model", "params"] or len(parts) != 3 or not isinstance(model, dict):
        return
    method = model.get("method")
    table = model.get("params", {}).get(method) if isinstance(method, str) else None
    if isinstance(table, dict) and parts[2] in table:
        raise ConfigError(f"--set {item.strip()} would change nothing: [model.params.{method}] {parts[2]} = "
                          f"{table[parts[2]]!r} in {path} is what method {method!r} uses; set that one instead: "
                          f"--set model.params.{method}.{parts[2]}={text.strip()}")


def _takes_text_only(parts):
    """Whether the key at ``parts`` (section, key) takes a string and nothing else in ``SCHEMA`` (a path)."""
    spec = SCHEMA.get(parts[0], {}).get(parts[1]) if len(parts) == 2 else None
    return spec is not None and spec[0] is str


def validate(raw, source="<config>", require=REQUIRED_SECTIONS):
    """Check sections, keys and types against ``SCHEMA``; return a new dict with defaults filled in."""
    unknown = sorted(set(raw) - set(SCHEMA))
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {unknown}; the sections are {sorted(SCHEMA)}")
    config = {}
    for section, keys in SCHEMA.items():
        given = raw.get(section)
        needs = [k for k, spec in keys.items() if spec[1] is REQUIRED]
        if given is None:
            if section in require:
                raise ConfigError(f"{source}: section [{section}] is missing; it needs {needs}")
            if needs:
                continue  # an optional section that cannot be defaulted: absent from the config
            given = {}
        if not isinstance(given, dict):
            raise ConfigError(f"{source}: [{section}] must be a table of keys, got {given!r}")
        bad = sorted(set(given) - set(keys))
        if bad:
            raise ConfigError(f"{source}: unknown key(s) {bad} in [{section}]; known keys: {sorted(keys)}")
        config[section] = {}
        for key, (types, default, _) in keys.items():
            if key not in given:
                if default is REQUIRED:
                    raise ConfigError(f"{source}: [{section}] {key} is required ({keys[key][2]})")
                config[section][key] = copy.deepcopy(default)
                continue
            value = given[key]
            if isinstance(value, bool) and bool not in _as_tuple(types):
                value = None  # bool is an int in Python: refuse it where a number is meant
            if not isinstance(value, types):
                raise ConfigError(f"{source}: [{section}] {key} = {given[key]!r} has the wrong type; "
                                  f"expected {_type_names(types)} ({keys[key][2]})")
            config[section][key] = value
    _check_values(config, source)
    return config


def _check_values(config, source):
    for key in ("margin", "lock_wait_minutes"):
        if "retrain" in config and not config["retrain"][key] >= 0:
            raise ConfigError(f"{source}: [retrain] {key} must be >= 0, got {config['retrain'][key]}")
    for key in ("kept_exit_code", "locked_exit_code"):  # the shell sees a process's exit code modulo 256
        if "retrain" in config and not 0 <= config["retrain"][key] <= 255:
            raise ConfigError(f"{source}: [retrain] {key} must be an exit code from 0 to 255, got "
                              f"{config['retrain'][key]} (a scheduler would read {config['retrain'][key] % 256})")
    if "output" in config and config["output"]["plot_rows"] < 1:  # before the fit, not when plotting after it
        raise ConfigError(f"{source}: [output] plot_rows must be >= 1, got {config['output']['plot_rows']}")
    data = config.get("data")
    if data is None:
        return
    if not 0.0 < data["test_fraction"] < 1.0:
        raise ConfigError(f"{source}: [data] test_fraction must be in (0, 1), got {data['test_fraction']}")
    if data["source"] not in SOURCES:
        raise ConfigError(f"{source}: [data] source {data['source']!r} is unknown; use one of {sorted(SOURCES)}")
    if data["test_path"] and data["source"] in GENERATED_SOURCES:
        raise ConfigError(f"{source}: [data] test_path = {data['test_path']!r} names a file to read, and source "
                          f"{data['source']!r} generates its rows (test_fraction holds out the test part): remove "
                          "test_path, or set source to the format of your files")
    if data["source"] == "csv" and not isinstance(data["label_column"], int):  # a csv file is read without header
        raise ConfigError(f"{source}: [data] label_column = {data['label_column']!r} names a column, and csv files are "
                          "read without a header line: give the label's position (0 = first, -1 = last)")
    if not data["separator"]:  # --set data.separator=<a space> reads as empty: --set's values are stripped
        raise ConfigError(f"{source}: [data] separator is empty; give a space or a tab quoted, as TOML reads it: "
                          "--set 'data.separator=\" \"' or --set 'data.separator=\"\\t\"'")
    if data["scale"] not in ("none", "minmax", "standard"):
        raise ConfigError(f"{source}: [data] scale must be none, minmax or standard, got {data['scale']!r}")
    for key in ("rows", "features", "num_features"):
        if data[key] is not None and data[key] < 1:
            raise ConfigError(f"{source}: [data] {key} must be >= 1, got {data[key]}")


def describe():
    """Every section and key with its type, default and meaning: the jobs' ``--help`` epilog."""
    lines = ["config keys (TOML sections; override any with --set section.key=value):"]
    for section, keys in SCHEMA.items():
        lines.append(f"  [{section}]")
        for key, (types, default, doc) in keys.items():
            shown = "required" if default is REQUIRED else f"default {default!r}"
            lines.append(f"    {key} ({_type_names(types)}, {shown}): {doc}")
    return "\n".join(lines)


def _as_tuple(types):
    return types if isinstance(types, tuple) else (types,)


def _type_names(types):
    return " or ".join(t.__name__ for t in _as_tuple(types))
