"""a02_frame_callback: plausible mistakes in the skip rules, the cache lookup and the miss path."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a02_frame_callback"

MUTANTS = [
    # part 1: skip_reason
    Mutant("skips every installed package", "if package in trace_rules.SKIPPED_PACKAGES:",
           "if package is not None:", "modeling_bert.py"),
    Mutant("knows only site-packages", 'if part in ("site-packages", "dist-packages"):',
           'if part == "site-packages":', "dist-packages/sympy"),
    Mutant("keeps the .py of a one-file package", 'return parts[i + 1].removesuffix(".py")',
           "return parts[i + 1]", "typing_extensions"),
    Mutant("compares torch's directory without the separator",
           "TORCH_DIR = os.path.dirname(torch.__file__) + os.sep", "TORCH_DIR = os.path.dirname(torch.__file__)",
           "torchvision"),
    Mutant("skips packages installed below the standard library",
           ' and "site-packages" not in file:', ":", "diffusers"),
    Mutant("skips tinydynamo's user-level directories",
           " and not file.startswith(USER_LEVEL_DIRS):", ":", "MLP.forward"),
    Mutant("skips every <string> code, a user's exec too", '"<tinydynamo", "<frozen")',
           '"<tinydynamo", "<frozen", "<string>")', "exec_by_the_user"),
    Mutant("skips the forward of torch's modules",
           '    if code.co_filename.startswith(TORCH_MODULES_DIR) and code.co_name == "forward":\n        return None\n',
           "", "Linear.forward"),
    Mutant("compiles set and dict comprehensions", '"<listcomp>", "<dictcomp>", "<setcomp>",', '"<listcomp>",',
           "<setcomp>", versions=((3, 11),)),  # 3.12 inlines them: no such code objects
    Mutant("forgets coroutines", "inspect.CO_GENERATOR | inspect.CO_COROUTINE |", "inspect.CO_GENERATOR |", "fetch"),
    Mutant("delegates to the reference's skip_reason", "def skip_reason(code):",
           "def skip_reason(code, _reference=trace_rules.skip_reason):\n    return _reference(code)",
           "trace_rules.skip_reason", zero=("test_skip_reason_examples", "test_skip_reason_pipeline")),
    # part 2: lookup
    Mutant("scans the cache itself, not a copy", "in list(entries):", "in entries:", "removes its own entry"),
    Mutant("ignores the owner", "if entry_owner is owner and guard(*args):", "if guard(*args):", "(other, guard"),
    Mutant("the last passing entry wins", "in list(entries):", "in reversed(list(entries)):",
           "the first entry of this owner"),
    # part 3: on_cache_miss
    Mutant("warns once per function, not per wrapper",
           "    if code not in callback.warned:\n            callback.warned.add(code)",
           "    if code not in globals().setdefault('WARNED', set()):\n            WARNED.add(code)", "two_wrappers"),
    Mutant("never counts a recompile", '        counters["recompiles"] += 1', "        pass", "recompiles"),
    Mutant("counts other wrappers' entries as recompiles", "    if mine:\n", "    if entries:\n", "two_wrappers"),
    Mutant("gives up one entry too late", "if len(mine) >= config.cache_size_limit:",
           "if len(mine) > config.cache_size_limit:", "cache_limit"),
    Mutant("counts every wrapper's entries against the limit", "if len(mine) >= config.cache_size_limit:",
           "if len(entries) >= config.cache_size_limit:", "two_wrappers"),
    Mutant("gives up without the eager entry",
           "        entries.append((callback, convert_frame.always, convert_frame.eager_code(code)))\n", "",
           "reached the callback"),
    Mutant("skips without the SKIP mark", "        eval_frame.set_skip(code)\n", "", "reached the callback"),
    Mutant("translates every miss, as the book's demo callback does",
           "    entries = eval_frame.get_cache_entries(code)\n",
           "    entries = eval_frame.get_cache_entries(code)\n    return callback.convert(func, args, code, entries)\n",
           "recompiles"),
    Mutant("delegates to the reference's ConvertFrame.__call__", "def on_cache_miss(callback, func, args):",
           "def on_cache_miss(callback, func, args, _reference=convert_frame.ConvertFrame.__call__):\n"
           "    return _reference(callback, func, args)",
           "ConvertFrame.__call__", zero=("test_on_cache_miss_examples", "test_on_cache_miss_pipeline")),
    # delegation through a second copy of a reference module (importlib)
    Mutant("delegates to a second copy of trace_rules", "def skip_reason(code):",
           "def skip_reason(code):\n"
           "    import importlib.util\n"
           "    global _COPY\n"
           "    if '_COPY' not in globals():\n"
           "        spec = importlib.util.spec_from_file_location('tinydynamo.dynamo.trace_rules_copy', trace_rules.__file__)\n"
           "        _COPY = importlib.util.module_from_spec(spec)\n"
           "        spec.loader.exec_module(_COPY)\n"
           "    return _COPY.skip_reason(code)\n"
           "def _unused(code):",
           "skip_reason", zero=("test_skip_reason_examples", "test_skip_reason_pipeline")),
    Mutant("lookup delegates to a copy of convert_frame", "def lookup(entries, owner, args):",
           "def lookup(entries, owner, args):\n"
           "    import importlib.util, types\n"
           "    spec = importlib.util.spec_from_file_location('tinydynamo.dynamo.convert_frame_copy', convert_frame.__file__)\n"
           "    m = importlib.util.module_from_spec(spec)\n"
           "    spec.loader.exec_module(m)\n"
           "    e = m.passing_entry([e for e in list(entries) if e[0] is owner], types.SimpleNamespace(__closure__=None), args)\n"
           "    return None if e is None else e[2]\n"
           "def _unused(entries, owner, args):",
           "lookup", zero=("test_lookup_examples",)),
    Mutant("on_cache_miss delegates to a copy of convert_frame", "def on_cache_miss(callback, func, args):",
           "def on_cache_miss(callback, func, args):\n"
           "    import importlib.util\n"
           "    spec = importlib.util.spec_from_file_location('tinydynamo.dynamo.convert_frame_copy', convert_frame.__file__)\n"
           "    m = importlib.util.module_from_spec(spec)\n"
           "    spec.loader.exec_module(m)\n"
           "    return m.ConvertFrame.__call__(callback, func, args)\n"
           "def _unused(callback, func, args):",
           "ConvertFrame.__call__", zero=("test_on_cache_miss_examples",)),
    Mutant("compiles every forward under torch/, not only those of torch.nn.modules",
           'if code.co_filename.startswith(TORCH_MODULES_DIR) and code.co_name == "forward":',
           'if code.co_filename.startswith(TORCH_DIR) and code.co_name == "forward":', "DataParallel.forward"),
    # learner5's round
    # part 1: skip_reason
    Mutant("skips lambdas like comprehensions", '"<setcomp>", "<module>"):', '"<setcomp>", "<module>", "<lambda>"):',
           "<lambda>"),
    Mutant("compiles every method whose name contains forward in torch.nn.modules",
           'if code.co_filename.startswith(TORCH_MODULES_DIR) and code.co_name == "forward":',
           'if code.co_filename.startswith(TORCH_MODULES_DIR) and "forward" in code.co_name:', "_conv_forward"),
    Mutant("finds torch by a /torch/ path component anywhere", "    if file.startswith(TORCH_DIR):\n",
           "    if f\"{os.sep}torch{os.sep}\" in file:\n", "torch"),
    Mutant("only testing/ is user-level in tinydynamo", " and not file.startswith(USER_LEVEL_DIRS):",
           " and not file.startswith(USER_LEVEL_DIRS[0]):", "course"),
    Mutant("skips only the packages named in the task text", "    if package in trace_rules.SKIPPED_PACKAGES:\n",
           "    if package in {\"numpy\", \"sympy\", \"pytest\", \"IPython\"}:\n", "tqdm"),
    Mutant("forgets async generators", "| inspect.CO_ASYNC_GENERATOR", "", "stream"),
    Mutant("forgets module code", '"<setcomp>", "<module>"):', '"<setcomp>"):', "<module>"),
    Mutant("frozen modules compiled", '"<tinydynamo", "<frozen")', '"<tinydynamo")', "frozen"),
    Mutant("looks for the first site-packages after the last one (takes the last path part)",
           "            return parts[i + 1].removesuffix(\".py\")", "            return parts[-2]", "skip_reason("),
    # part 2: lookup
    Mutant("calls the guard before checking the owner", "if entry_owner is owner and guard(*args):",
           "if guard(*args) and entry_owner is owner:", "other"),
    Mutant("accepts only guards that return True itself", "if entry_owner is owner and guard(*args):",
           "if entry_owner is owner and guard(*args) is True:", "any true or false value"),
    Mutant("passes the arguments as one tuple", "if entry_owner is owner and guard(*args):",
           "if entry_owner is owner and guard(args):", "guard(*args)"),
    Mutant("returns the whole entry", "            return new_code\n    return None\n",
           "            return (entry_owner, guard, new_code)\n    return None\n", "lookup("),
    Mutant("scans by index and forgets to move past other owners (loops forever)",
           "    for entry_owner, guard, new_code in list(entries):\n        if entry_owner is owner and guard(*args):\n            return new_code\n",
           "    entries, i = list(entries), 0\n    while i < len(entries):\n        entry_owner, guard, new_code = entries[i]\n"
           "        if entry_owner is owner:\n            if guard(*args):\n                return new_code\n            i += 1\n",
           "entries of other owners"),
    # part 3: on_cache_miss
    Mutant("reads the cache limit when the cell runs",
           "def on_cache_miss(callback, func, args):\n    \"\"\"The callback on a cache miss: skip, give up past the limit, or (re)compile.\"\"\"\n"
           "    ### BEGIN SOLUTION\n    code = func.__code__\n    if skip_reason(code) is not None:\n        eval_frame.set_skip(code)\n"
           "        return None\n    entries = eval_frame.get_cache_entries(code)\n    mine = [entry for entry in entries if entry[0] is callback]\n"
           "    if len(mine) >= config.cache_size_limit:\n",
           "LIMIT = config.cache_size_limit\n"
           "def on_cache_miss(callback, func, args):\n    \"\"\"The callback on a cache miss: skip, give up past the limit, or (re)compile.\"\"\"\n"
           "    ### BEGIN SOLUTION\n    code = func.__code__\n    if skip_reason(code) is not None:\n        eval_frame.set_skip(code)\n"
           "        return None\n    entries = eval_frame.get_cache_entries(code)\n    mine = [entry for entry in entries if entry[0] is callback]\n"
           "    if len(mine) >= LIMIT:\n", "cache_limit"),
    Mutant("warns without saying cache_size_limit", 'warnings.warn(f"{code.co_name} reached config.cache_size_limit="',
           'warnings.warn(f"{code.co_name} was recompiled too often, limit="', "warning"),
    Mutant("counts a recompile only from the second one", "    if mine:\n", "    if len(mine) > 1:\n", "recompiles"),
    Mutant("gives up with an entry that no owner matches",
           "        entries.append((callback, convert_frame.always, convert_frame.eager_code(code)))\n",
           "        entries.append((None, convert_frame.always, convert_frame.eager_code(code)))\n", "reached the callback"),
    Mutant("forgets to return the translated code", "    return callback.convert(func, args, code, entries)\n",
           "    callback.convert(func, args, code, entries)\n", "ran no compiled graph"),
]
