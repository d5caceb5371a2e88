from grader.grading.extract import extract_code


def test_picks_the_block_that_defines_the_entry_point():
    text = "Helper:\n```python\nX = 1\n```\nAnswer:\n```py\ndef solve(a):\n    return {'x': a}\n```\n"
    ex = extract_code(text, "solve")
    assert ex.method == "fenced" and ex.code.startswith("def solve") and ex.blocks == 2


def test_last_defining_block_wins():
    text = "```python\ndef solve():\n    return 1\n```\nActually:\n```python\ndef solve():\n    return 2\n```"
    assert "return 2" in extract_code(text, "solve").code


def test_unclosed_fence_and_think_sections():
    text = "<think>```python\ndef solve(): return 0\n```</think>\n```python\ndef solve():\n    return 3\n"
    ex = extract_code(text, "solve")
    assert ex.code.strip().endswith("return 3")


def test_raw_python_without_fences():
    assert extract_code("import math\n\ndef solve(x):\n    return x\n", "solve").method == "raw"


def test_prose_before_unfenced_code():
    ex = extract_code("Here you go:\nimport math\ndef solve(x):\n    return x\n", "solve")
    assert ex.method == "raw" and ex.code.startswith("import math")


def test_no_code_is_reported_not_raised():
    for text in ("", "   ", "I cannot do this.", "```text\nhello\n```", None, "\x00\x01binary"):
        ex = extract_code(text, "solve")
        assert ex.code is None and ex.method == "none" and ex.reason


def test_block_without_entry_point_is_still_taken():
    ex = extract_code("```python\ndef other():\n    pass\n```", "solve")
    assert ex.code is not None and "no block defines" in ex.reason


def test_huge_completion():
    ex = extract_code("x" * 3_000_000, "solve")
    assert ex.code is None and "longer" in ex.reason


def test_extraction_is_safe_from_many_threads():
    from concurrent.futures import ThreadPoolExecutor

    deep = "```python\ndef solve(x):\n    return " + "(" * 40 + "x" + ")" * 40 + "\n```"
    texts = [deep, "```python\ndef solve(x):\n    return [[[[x]]]]\n```"] * 200
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda t: extract_code(t, "solve"), texts))
    assert all(r.code is not None and r.method == "fenced" for r in results)
