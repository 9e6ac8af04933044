"""The closed set of operations every IR in Auto-Perfect is keyed on.

Adding an op is one visible change here; the tracer, the interpreter, canonicalization, fusion and
every renderer key their tables on `Op`, and a test checks that each table covers what it must.
"""

from __future__ import annotations

from enum import Enum


class Op(str, Enum):
    # leaves
    INPUT = "input"
    CONST = "const"
    # unary elementwise
    NEG = "neg"
    ABS = "abs"
    SQUARE = "square"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    RECIPROCAL = "reciprocal"
    EXP = "exp"
    EXPM1 = "expm1"
    LOG = "log"
    LOG1P = "log1p"
    TANH = "tanh"
    SIGMOID = "sigmoid"
    ERF = "erf"
    SIN = "sin"
    COS = "cos"
    FLOOR = "floor"
    CEIL = "ceil"
    SIGN = "sign"
    NOT = "logical_not"
    ISNAN = "isnan"
    ISINF = "isinf"
    CAST = "astype"
    # binary elementwise
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    POW = "power"
    MAX = "maximum"
    MIN = "minimum"
    EQ = "equal"
    NE = "not_equal"
    LT = "less"
    LE = "less_equal"
    GT = "greater"
    GE = "greater_equal"
    AND = "logical_and"
    OR = "logical_or"
    # ternary
    WHERE = "where"
    # reductions (attrs: axes, keepdims)
    SUM = "sum"
    PROD = "prod"
    RMAX = "max"
    RMIN = "min"
    # composite ops the tracer records and canonicalization lowers to primitives
    MEAN = "mean"
    VAR = "var"
    STD = "std"
    LOGSUMEXP = "logsumexp"
    SOFTMAX = "softmax"
    LOG_SOFTMAX = "log_softmax"
    ALL = "all"
    ANY = "any"
    # movement (attrs: shape / perm)
    RESHAPE = "reshape"
    TRANSPOSE = "transpose"
    BROADCAST = "broadcast_to"
    # left to MLX, never fused: fusion stops at them and fuses what they feed and what feeds them
    MATMUL = "matmul"              # GEMM (attrs: none; batch dims broadcast)
    CUMSUM = "cumsum"              # SCAN (attrs: axis, reverse, inclusive)
    CUMPROD = "cumprod"
    ARGMAX = "argmax"              # INDEXING (attrs: axis, keepdims); uint32 indices
    ARGMIN = "argmin"
    SLICE = "slice"                # (attrs: starts, stops, steps per axis)
    CONCATENATE = "concatenate"    # (attrs: axis; any number of sources)
    TAKE = "take"                  # (attrs: axis) srcs: array, indices
    TAKE_ALONG_AXIS = "take_along_axis"
    # KernelIR only: reading an argument buffer, writing an output buffer
    LOAD = "load"
    STORE = "store"


UNARY = frozenset({
    Op.NEG, Op.ABS, Op.SQUARE, Op.SQRT, Op.RSQRT, Op.RECIPROCAL, Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P,
    Op.TANH, Op.SIGMOID, Op.ERF, Op.SIN, Op.COS, Op.FLOOR, Op.CEIL, Op.SIGN, Op.NOT, Op.ISNAN,
    Op.ISINF, Op.CAST,
})
BINARY = frozenset({
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.MAX, Op.MIN, Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT,
    Op.GE, Op.AND, Op.OR,
})
TERNARY = frozenset({Op.WHERE})
ELEMENTWISE = UNARY | BINARY | TERNARY
REDUCE = frozenset({Op.SUM, Op.PROD, Op.RMAX, Op.RMIN})
COMPOSITE = frozenset({Op.MEAN, Op.VAR, Op.STD, Op.LOGSUMEXP, Op.SOFTMAX, Op.LOG_SOFTMAX, Op.ALL, Op.ANY})
GEMM = frozenset({Op.MATMUL})
SCAN = frozenset({Op.CUMSUM, Op.CUMPROD})
INDEXING = frozenset({Op.ARGMAX, Op.ARGMIN, Op.SLICE, Op.CONCATENATE, Op.TAKE, Op.TAKE_ALONG_AXIS})
OPAQUE = GEMM | SCAN | INDEXING  # run by MLX between fused kernels
MOVEMENT = frozenset({Op.RESHAPE, Op.TRANSPOSE, Op.BROADCAST})
LEAF = frozenset({Op.INPUT, Op.CONST})
COMPARE = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})
LOGICAL = frozenset({Op.NOT, Op.AND, Op.OR})
PREDICATE = COMPARE | LOGICAL | frozenset({Op.ISNAN, Op.ISINF})  # ops whose result is bool

# Correctly rounded in IEEE arithmetic (or exact): a kernel must match a step-by-step reference bit
# for bit. Everything else elementwise is an approximation held to a ULP bound.
EXACT = frozenset({
    Op.NEG, Op.ABS, Op.SQUARE, Op.SQRT, Op.RECIPROCAL, Op.FLOOR, Op.CEIL, Op.SIGN, Op.ADD, Op.SUB,
    Op.MUL, Op.DIV, Op.MAX, Op.MIN, Op.WHERE, Op.CAST, Op.RMAX, Op.RMIN,
}) | PREDICATE | LEAF | MOVEMENT | INDEXING

# Worst error, in units in the last place of the result, allowed for one evaluation of each
# approximated function: glibc documents <= 4 ulp for its scalar and vector (libmvec) float
# functions; rsqrt is 1/sqrt (two roundings); sigmoid is 1/(1+exp(-x)) (exp's error plus two).
ULP_BOUND = {
    Op.RSQRT: 2, Op.EXP: 4, Op.EXPM1: 4, Op.LOG: 4, Op.LOG1P: 4, Op.TANH: 4, Op.SIGMOID: 8,
    Op.ERF: 4, Op.SIN: 4, Op.COS: 4, Op.POW: 4,
}

ARITY = {**{op: 1 for op in UNARY}, **{op: 2 for op in BINARY}, Op.WHERE: 3,
         **{op: 1 for op in REDUCE | COMPOSITE | MOVEMENT | SCAN}, Op.INPUT: 0, Op.CONST: 0, Op.LOAD: 0,
         Op.STORE: 1, Op.MATMUL: 2, Op.ARGMAX: 1, Op.ARGMIN: 1, Op.SLICE: 1, Op.CONCATENATE: None,
         Op.TAKE: 2, Op.TAKE_ALONG_AXIS: 2}  # None: any number


def op_class(op: Op) -> str:
    """The fusion class of an op: what fusion may do with it."""
    for name, group in (("ELEMENTWISE", ELEMENTWISE), ("REDUCTION", REDUCE | COMPOSITE), ("SCAN", SCAN),
                        ("GEMM", GEMM), ("MOVEMENT/VIEW", MOVEMENT), ("INDEXING", INDEXING)):
        if op in group:
            return name
    return "LEAF"
