# PLACEHOLDER (to be replaced by the exact search): the whole space enumerated on small instances,
# else the deep local search.
import itertools


def exact_search(prob):
    return deep_search(prob, 6, kicks=60)


def exact_mapper(workload, architecture, holds, objective):
    """The mapping: the exact search's, or a baseline's (FLAGS search: random or greedy)."""
    if FLAGS.get("search") in ("random", "greedy"):
        return search(workload, architecture, holds, objective)
    prob = Problem(workload, architecture, holds, objective)
    _, f, order = exact_search(prob)
    return prob.mapping(f, order)
