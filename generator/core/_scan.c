/* The matcher's loops in compiled code. First the metric reader's: metrics.py's rules 1-5 over every line of a piece,
 * and the numeric checks over the readings.
 *
 * metrics.read (Python, a regex per quantity) stays the definition: this module follows the same
 * pattern (metrics._pattern) step by step, in the order a backtracking regex tries its choices, so
 * the first reading it finds is the regex's; tests/test_scan.py checks the two on
 * generated lines. What this saves is Python work per reading (half the lines of a training log
 * hold one), not regex work.
 *
 * readings(piece, quantities, requests, max_line, key_chars, not_after)
 *   quantities: tuple of (keys, key_scales, units, unit_scales), keys/units in the pattern's order
 *   requests:   tuple of (q, of) indexes into quantities (of = -1: none)
 *   returns a tuple, per request, of (line indexes, line starts, values): array bytes of int64,
 *   int64, double. For (q, -1) every line with a reading of q in some segment (the first such
 *   segment; NaN for nan/inf); for (q, of) the lines where q's reading and of's reading in that
 *   segment are finite and of's is > 0, with the share q/of. None when the piece has a segment
 *   longer than max_line bytes that is not ASCII (the cut is in characters: Python decides those).
 *
 * check(kind, times, limit, previous, streak, good, values) -> (previous, streak, good, fired)
 *   kind 0 nonfinite, 1 rising, 2 falls_to (limit), 3 share_above (limit); previous None or a
 *   float; fired: int64 array bytes of the indexes where the check fired (matcher._numeric). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>
#include <stdint.h>

#define MAXQ 32

typedef struct {
    const unsigned char *s;
    Py_ssize_t n;
    double scale;
} Word;

typedef struct {
    Word *keys;
    int nkeys;
    Word *units;
    int nunits;
} Quantity;

typedef struct {
    int found;
    Py_ssize_t start, end;
    int finite;
    double value;
} Reading;

static const char *NONFINITE[] = {"nan", "NaN", "NAN", "Infinity", "infinity", "inf", "Inf", "INF"};

typedef struct {
    const unsigned char *s; /* the segment */
    Py_ssize_t b;           /* its length */
    const unsigned char *forbidden; /* rule 2's look-ahead: what may not follow a reading */
} Seg;

static int is_space(unsigned char c) { return c == ' ' || c == '\t'; }
static int is_quote(unsigned char c) { return c == '\'' || c == '"'; }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static int ahead_ok(const Seg *g, Py_ssize_t z) { return z >= g->b || !g->forbidden[g->s[z]]; }

/* After the number: ['"]? then (?:[ ]?(units))? then the look-ahead. Sets *end, *uscale. */
static int tail(const Seg *g, const Quantity *q, Py_ssize_t at, Py_ssize_t *end, double *uscale) {
    for (int qo = (at < g->b && is_quote(g->s[at])) ? 1 : 0; qo >= 0; qo--) {
        Py_ssize_t x = at + qo;
        if (q->nunits) {
            for (int sp = (x < g->b && g->s[x] == ' ') ? 1 : 0; sp >= 0; sp--) {
                Py_ssize_t y = x + sp;
                for (int u = 0; u < q->nunits; u++) {
                    const Word *w = &q->units[u];
                    if (y + w->n <= g->b && memcmp(g->s + y, w->s, w->n) == 0 && ahead_ok(g, y + w->n)) {
                        *end = y + w->n;
                        *uscale = w->scale;
                        return 1;
                    }
                }
            }
        }
        if (ahead_ok(g, x)) {
            *end = x;
            *uscale = 1.0;
            return 1;
        }
    }
    return 0;
}

/* The number (an integer or decimal with an optional exponent, or nan/inf) at v. Only the
 * longest form can be followed by a valid tail: a shorter one is followed by a digit, '.', or
 * 'e', which the look-ahead refuses and no quote or unit begins with. */
static int number(const Seg *g, const Quantity *q, Py_ssize_t v, Reading *r) {
    const unsigned char *s = g->s;
    Py_ssize_t b = g->b, w = v;
    if (w < b && (s[w] == '+' || s[w] == '-')) w++;
    if (w < b && (is_digit(s[w]) || (s[w] == '.' && w + 1 < b && is_digit(s[w + 1])))) {
        if (is_digit(s[w])) {
            while (w < b && is_digit(s[w])) w++;
            if (w < b && s[w] == '.') {
                w++;
                while (w < b && is_digit(s[w])) w++;
            }
        } else {
            w++;
            while (w < b && is_digit(s[w])) w++;
        }
        if (w < b && (s[w] == 'e' || s[w] == 'E')) {
            Py_ssize_t e = w + 1;
            if (e < b && (s[e] == '+' || s[e] == '-')) e++;
            if (e < b && is_digit(s[e])) {
                while (e < b && is_digit(s[e])) e++;
                w = e;
            }
        }
        Py_ssize_t end;
        double uscale;
        if (!tail(g, q, w, &end, &uscale)) return 0;
        char buf[128];
        Py_ssize_t len = w - v;
        double value;
        if (len < (Py_ssize_t)sizeof buf) {
            memcpy(buf, s + v, len);
            buf[len] = 0;
            value = PyOS_string_to_double(buf, NULL, NULL);
        } else {
            PyObject *text = PyUnicode_DecodeASCII((const char *)s + v, len, NULL);
            PyObject *f = text ? PyFloat_FromString(text) : NULL;
            Py_XDECREF(text);
            value = f ? PyFloat_AsDouble(f) : -1.0;
            Py_XDECREF(f);
        }
        if (PyErr_Occurred()) return -1;
        r->finite = 1;
        r->value = value * uscale;
        r->end = end;
        return 1;
    }
    for (int k = 0; k < 8; k++) {
        Py_ssize_t n = (Py_ssize_t)strlen(NONFINITE[k]);
        if (w + n <= b && memcmp(s + w, NONFINITE[k], n) == 0) {
            Py_ssize_t end;
            double uscale;
            if (!tail(g, q, w + n, &end, &uscale)) return 0;
            r->finite = 0;
            r->value = NAN;
            r->end = end;
            return 1;
        }
    }
    return 0;
}

/* \[?[ \t]*['"]? then the number. */
static int value_at(const Seg *g, const Quantity *q, Py_ssize_t t, Reading *r) {
    for (int br = (t < g->b && g->s[t] == '[') ? 1 : 0; br >= 0; br--) {
        Py_ssize_t u = t + br;
        while (u < g->b && is_space(g->s[u])) u++;
        for (int qo = (u < g->b && is_quote(g->s[u])) ? 1 : 0; qo >= 0; qo--) {
            int got = number(g, q, u + qo, r);
            if (got) return got;
        }
    }
    return 0;
}

/* After a key: ['"]? then (?:[ \t]*[:=][ \t]*|[ \t]+) then the value. */
static int after_key(const Seg *g, const Quantity *q, Py_ssize_t at, Reading *r) {
    const unsigned char *s = g->s;
    Py_ssize_t b = g->b;
    for (int qo = (at < b && is_quote(s[at])) ? 1 : 0; qo >= 0; qo--) {
        Py_ssize_t t = at + qo;
        while (t < b && is_space(s[t])) t++;
        if (t < b && (s[t] == ':' || s[t] == '=')) {
            t++;
            while (t < b && is_space(s[t])) t++;
            int got = value_at(g, q, t, r);
            if (got) return got;
        }
        t = at + qo;
        if (t < b && is_space(s[t])) {
            while (t < b && is_space(s[t])) t++;
            int got = value_at(g, q, t, r);
            if (got) return got;
        }
    }
    return 0;
}

/* A match of quantity q starting at p: the first key, in the pattern's order, that leads to one. */
static int match_at(const Seg *g, const Quantity *q, Py_ssize_t p, Reading *r) {
    for (int k = 0; k < q->nkeys; k++) {
        const Word *w = &q->keys[k];
        if (p + w->n <= g->b && w->s[0] == g->s[p] && (w->n < 2 || w->s[1] == g->s[p + 1]) && memcmp(g->s + p, w->s, w->n) == 0) {
            int got = after_key(g, q, p + w->n, r);
            if (got < 0) return -1;
            if (got) {
                r->value *= w->scale;
                r->start = p;
                return 1;
            }
        }
    }
    return 0;
}

static int words(PyObject *seq, PyObject *scales, Word **out, int *count) {
    Py_ssize_t n = PyTuple_Size(seq);
    if (n < 0 || PyTuple_Size(scales) != n) {
        PyErr_SetString(PyExc_ValueError, "words and scales differ in length");
        return -1;
    }
    *out = PyMem_Calloc(n ? n : 1, sizeof(Word));
    if (!*out) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *w = PyTuple_GET_ITEM(seq, i);
        char *buf;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(w, &buf, &len) < 0) return -1;
        (*out)[i].s = (const unsigned char *)buf;
        (*out)[i].n = len;
        (*out)[i].scale = PyFloat_AsDouble(PyTuple_GET_ITEM(scales, i));
        if (PyErr_Occurred()) return -1;
    }
    *count = (int)n;
    return 0;
}

typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
} I64;

typedef struct {
    double *data;
    Py_ssize_t len, cap;
} F64;

static int push_i(I64 *a, int64_t v) {
    if (a->len == a->cap) {
        Py_ssize_t cap = a->cap ? a->cap * 2 : 256;
        int64_t *d = PyMem_Realloc(a->data, cap * sizeof(int64_t));
        if (!d) return -1;
        a->data = d;
        a->cap = cap;
    }
    a->data[a->len++] = v;
    return 0;
}

static int push_f(F64 *a, double v) {
    if (a->len == a->cap) {
        Py_ssize_t cap = a->cap ? a->cap * 2 : 256;
        double *d = PyMem_Realloc(a->data, cap * sizeof(double));
        if (!d) return -1;
        a->data = d;
        a->cap = cap;
    }
    a->data[a->len++] = v;
    return 0;
}

typedef struct {
    int q, of;
    int done; /* this line's reading is taken (the first segment with one) */
    I64 lines, starts;
    F64 values;
} Request;

/* The last reading of quantity q in segment g (rules 1 and 4), scanning from the positions
 * whose two bytes may begin one of its keys (`pairs`). */
typedef struct {
    Py_ssize_t *at;
    uint32_t *mask;
    Py_ssize_t len, cap;
} Candidates;

/* The positions of a segment whose two bytes may begin a key, with the quantities whose keys
 * they may begin: one pass over the segment for all the quantities. */
static int candidates(const Seg *g, const uint32_t *pairs, const unsigned char *any, Candidates *c) {
    const unsigned char *s = g->s;
    c->len = 0;
    for (Py_ssize_t p = 0; p + 1 < g->b; p++) {
        unsigned idx = ((unsigned)s[p] << 8) | s[p + 1];
        if (!(any[idx >> 3] & (1u << (idx & 7)))) continue; /* a bit per pair: small enough to stay in cache */
        uint32_t m = pairs[idx];
        if (c->len == c->cap) {
            Py_ssize_t cap = c->cap ? c->cap * 2 : 64;
            Py_ssize_t *at = PyMem_Realloc(c->at, cap * sizeof(Py_ssize_t));
            if (!at) return -1;
            c->at = at;
            uint32_t *mask = PyMem_Realloc(c->mask, cap * sizeof(uint32_t));
            if (!mask) return -1;
            c->mask = mask;
            c->cap = cap;
        }
        c->at[c->len] = p;
        c->mask[c->len++] = m;
    }
    return 0;
}

static int segment_reading(const Seg *g, const Quantity *q, int qi, const Candidates *c, const unsigned char *key_chars,
                           PyObject *not_after, Reading *last) {
    last->found = 0;
    Py_ssize_t pos = 0;
    uint32_t bit = 1u << qi;
    const unsigned char *s = g->s;
    Py_ssize_t n_after = PyTuple_GET_SIZE(not_after);
    for (Py_ssize_t k = 0; k < c->len; k++) {
        Py_ssize_t p = c->at[k];
        if (p < pos || !(c->mask[k] & bit)) continue;
        Reading r;
        int got = match_at(g, q, p, &r);
        if (got < 0) return -1;
        if (!got) continue;
        if (p) {
            unsigned char before = s[p - 1];
            int skip = key_chars[before];
            if (!skip && before == ' ') {
                for (Py_ssize_t k = 0; k < n_after && !skip; k++) {
                    PyObject *w = PyTuple_GET_ITEM(not_after, k);
                    Py_ssize_t wn = PyBytes_GET_SIZE(w);
                    skip = wn <= p && memcmp(s + p - wn, PyBytes_AS_STRING(w), wn) == 0;
                }
            }
            if (skip) continue; /* the regex search goes on from the next position */
        }
        *last = r;
        last->found = 1;
        pos = r.end;
    }
    return 0;
}

static PyObject *array_bytes(const void *data, Py_ssize_t n) {
    return PyBytes_FromStringAndSize(data ? (const char *)data : "", n);
}

static PyObject *readings(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer piece;
    PyObject *quantities, *requests, *not_after;
    Py_ssize_t max_line;
    Py_buffer key_chars_buf;
    if (!PyArg_ParseTuple(args, "y*O!O!ny*O!", &piece, &PyTuple_Type, &quantities, &PyTuple_Type, &requests, &max_line,
                          &key_chars_buf, &PyTuple_Type, &not_after))
        return NULL;
    PyObject *result = NULL;
    Quantity qs[MAXQ];
    memset(qs, 0, sizeof qs);
    Request *reqs = NULL;
    Py_ssize_t nq = PyTuple_GET_SIZE(quantities), nr = PyTuple_GET_SIZE(requests);
    uint32_t *pairs = NULL;
    Candidates cands = {0};
    unsigned char key_chars[256], forbidden[256], any[8192];
    memset(any, 0, sizeof any);
    memset(key_chars, 0, sizeof key_chars);
    memset(forbidden, 0, sizeof forbidden);
    for (Py_ssize_t i = 0; i < key_chars_buf.len; i++) key_chars[((unsigned char *)key_chars_buf.buf)[i]] = 1;
    for (int c = 0; c < 256; c++) forbidden[c] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '_' || c == '.' || c == ':' || c == '/';
    if (nq > MAXQ) {
        PyErr_SetString(PyExc_ValueError, "too many quantities");
        goto done;
    }
    for (Py_ssize_t i = 0; i < nq; i++) {
        PyObject *t = PyTuple_GET_ITEM(quantities, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 4) {
            PyErr_SetString(PyExc_TypeError, "a quantity is (keys, key_scales, units, unit_scales)");
            goto done;
        }
        if (words(PyTuple_GET_ITEM(t, 0), PyTuple_GET_ITEM(t, 1), &qs[i].keys, &qs[i].nkeys) < 0) goto done;
        if (words(PyTuple_GET_ITEM(t, 2), PyTuple_GET_ITEM(t, 3), &qs[i].units, &qs[i].nunits) < 0) goto done;
    }
    reqs = PyMem_Calloc(nr ? nr : 1, sizeof(Request));
    pairs = PyMem_Calloc(65536, sizeof(uint32_t));
    if (!reqs || !pairs) {
        PyErr_NoMemory();
        goto done;
    }
    uint32_t needed = 0;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *t = PyTuple_GET_ITEM(requests, i);
        if (!PyArg_ParseTuple(t, "ii", &reqs[i].q, &reqs[i].of)) goto done;
        if (reqs[i].q < 0 || reqs[i].q >= nq || reqs[i].of >= nq) {
            PyErr_SetString(PyExc_ValueError, "a request names no quantity");
            goto done;
        }
        needed |= 1u << reqs[i].q;
        if (reqs[i].of >= 0) needed |= 1u << reqs[i].of;
    }
    for (Py_ssize_t i = 0; i < nq; i++) {
        if (!(needed & (1u << i))) continue;
        for (int k = 0; k < qs[i].nkeys; k++) {
            const Word *w = &qs[i].keys[k];
            for (int c = 0; c < 256; c++) {
                if (w->n == 0 || (w->n >= 2 && c != w->s[1])) continue;
                unsigned idx = ((unsigned)w->s[0] << 8) | (unsigned)c;
                pairs[idx] |= 1u << i;
                any[idx >> 3] |= (unsigned char)(1u << (idx & 7));
            }
        }
    }
    const unsigned char *s = piece.buf;
    Py_ssize_t n = piece.len;
    /* A segment longer than max_line bytes is cut at max_line characters: the same for ASCII. */
    for (Py_ssize_t a = 0; a < n;) {
        const unsigned char *nl = memchr(s + a, '\n', n - a);
        Py_ssize_t e = nl ? nl - s : n;
        for (Py_ssize_t x = a; x < e;) {
            const unsigned char *cr = memchr(s + x, '\r', e - x);
            Py_ssize_t y = cr ? cr - s : e;
            if (y - x > max_line)
                for (Py_ssize_t k = x; k < y; k++)
                    if (s[k] >= 0x80) {
                        result = Py_None;
                        Py_INCREF(result);
                        goto done;
                    }
            x = y + 1;
        }
        a = e + 1;
    }
    Reading got[MAXQ];
    int64_t line = 0;
    for (Py_ssize_t a = 0; a < n;) {
        const unsigned char *nl = memchr(s + a, '\n', n - a);
        Py_ssize_t e = nl ? nl - s : n;
        for (Py_ssize_t i = 0; i < nr; i++) reqs[i].done = 0;
        for (Py_ssize_t x = a; x <= e;) {
            const unsigned char *cr = memchr(s + x, '\r', e - x);
            Py_ssize_t y = cr ? cr - s : e;
            Seg g = {s + x, y - x > max_line ? max_line : y - x, forbidden};
            uint32_t have = 0; /* quantities read in this segment */
            if (candidates(&g, pairs, any, &cands) < 0) {
                PyErr_NoMemory();
                goto done;
            }
            for (Py_ssize_t i = 0; i < nr; i++) {
                Request *rq = &reqs[i];
                if (rq->done) continue;
                if (!(have & (1u << rq->q))) {
                    if (segment_reading(&g, &qs[rq->q], rq->q, &cands, key_chars, not_after, &got[rq->q]) < 0) goto done;
                    have |= 1u << rq->q;
                }
                Reading *r = &got[rq->q];
                if (!r->found) continue;
                rq->done = 1;
                double value = r->value;
                if (rq->of >= 0) {
                    if (!(have & (1u << rq->of))) {
                        if (segment_reading(&g, &qs[rq->of], rq->of, &cands, key_chars, not_after, &got[rq->of]) < 0) goto done;
                        have |= 1u << rq->of;
                    }
                    Reading *w = &got[rq->of];
                    if (!(r->finite && w->found && w->finite && w->value > 0)) continue;
                    value = r->value / w->value;
                }
                if (push_i(&rq->lines, line) < 0 || push_i(&rq->starts, a) < 0 || push_f(&rq->values, r->finite ? value : NAN) < 0) {
                    PyErr_NoMemory();
                    goto done;
                }
            }
            x = y + 1;
        }
        line++;
        a = e + 1;
    }
    result = PyTuple_New(nr);
    if (!result) goto done;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *t = Py_BuildValue("(NNN)", array_bytes(reqs[i].lines.data, reqs[i].lines.len * 8),
                                    array_bytes(reqs[i].starts.data, reqs[i].starts.len * 8),
                                    array_bytes(reqs[i].values.data, reqs[i].values.len * 8));
        if (!t) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, i, t);
    }
done:
    for (Py_ssize_t i = 0; i < nq && i < MAXQ; i++) {
        PyMem_Free(qs[i].keys);
        PyMem_Free(qs[i].units);
    }
    if (reqs)
        for (Py_ssize_t i = 0; i < nr; i++) {
            PyMem_Free(reqs[i].lines.data);
            PyMem_Free(reqs[i].starts.data);
            PyMem_Free(reqs[i].values.data);
        }
    PyMem_Free(reqs);
    PyMem_Free(pairs);
    PyMem_Free(cands.at);
    PyMem_Free(cands.mask);
    PyBuffer_Release(&piece);
    PyBuffer_Release(&key_chars_buf);
    return result;
}

static PyObject *check(PyObject *self, PyObject *args) {
    (void)self;
    int kind;
    long long times;
    double limit;
    PyObject *previous_obj;
    long long streak, good;
    Py_buffer values;
    if (!PyArg_ParseTuple(args, "iLdOLLy*", &kind, &times, &limit, &previous_obj, &streak, &good, &values)) return NULL;
    int have_previous = previous_obj != Py_None;
    double previous = have_previous ? PyFloat_AsDouble(previous_obj) : 0.0;
    if (PyErr_Occurred()) {
        PyBuffer_Release(&values);
        return NULL;
    }
    const double *v = values.buf;
    Py_ssize_t n = values.len / (Py_ssize_t)sizeof(double);
    I64 fired = {0};
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = v[i];
        int finite = !isnan(x), hit = 0;
        if (kind == 0) {
            if (finite) good++;
            hit = !finite && good > 0;
        } else if (!finite) {
            continue;
        } else if (kind == 1) {
            streak = (have_previous && x > previous) ? streak + 1 : 1;
            previous = x;
            have_previous = 1;
            hit = streak >= times;
        } else if (kind == 2) {
            if (have_previous && x < previous) streak++;
            previous = x;
            have_previous = 1;
            hit = streak >= times && x <= limit;
        } else if (x >= limit) {
            good++;
            hit = good >= times;
        }
        if (hit && push_i(&fired, i) < 0) {
            PyMem_Free(fired.data);
            PyBuffer_Release(&values);
            return PyErr_NoMemory();
        }
    }
    PyBuffer_Release(&values);
    PyObject *prev = have_previous ? PyFloat_FromDouble(previous) : (Py_INCREF(Py_None), Py_None);
    PyObject *out = Py_BuildValue("(NLLN)", prev, streak, good, array_bytes(fired.data, fired.len * 8));
    PyMem_Free(fired.data);
    return out;
}

/* group_lines(piece, matches, max_line) -> (ends, plain, by_literal): matcher._group_lines, the
 * same dicts from the same loop (the literal matches of a piece, (literal, start, end) in order). */
static PyObject *group_lines(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer piece;
    PyObject *matches;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "y*O!n", &piece, &PyList_Type, &matches, &max_line)) return NULL;
    const unsigned char *s = piece.buf;
    Py_ssize_t n = piece.len;
    PyObject *ends = PyDict_New(), *plain = PyDict_New(), *by_literal = PyDict_New(), *result = NULL;
    PyObject *starts = NULL; /* the list of the literal of the last match (borrowed from by_literal) */
    Py_ssize_t start = -1, end = -1, last_lit = -1;
    if (!ends || !plain || !by_literal) goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(matches); k++) {
        PyObject *m = PyList_GET_ITEM(matches, k);
        if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) < 2) {
            PyErr_SetString(PyExc_TypeError, "a match is (literal, start, end)");
            goto done;
        }
        Py_ssize_t lit = PyLong_AsSsize_t(PyTuple_GET_ITEM(m, 0)), pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(m, 1));
        if (PyErr_Occurred()) goto done;
        if (pos < 0 || pos >= n) {
            PyErr_SetString(PyExc_ValueError, "a match outside the piece");
            goto done;
        }
        if (!(start <= pos && pos < end)) {
            Py_ssize_t a = pos;
            while (a > 0 && s[a - 1] != '\n') a--;
            const unsigned char *nl = memchr(s + pos, '\n', n - pos);
            start = a;
            end = nl ? nl - s : n;
            PyObject *key = PyLong_FromSsize_t(start), *val = PyLong_FromSsize_t(end), *raw = NULL;
            int bad = !key || !val || PyDict_SetItem(ends, key, val) < 0;
            if (!bad) {
                int ok = end - start <= max_line;
                for (Py_ssize_t x = start; ok && x < end; x++) ok = s[x] < 0x80;
                raw = ok ? PyBytes_FromStringAndSize((const char *)s + start, end - start) : (Py_INCREF(Py_None), Py_None);
                bad = !raw || PyDict_SetItem(plain, key, raw) < 0;
            }
            Py_XDECREF(key);
            Py_XDECREF(val);
            Py_XDECREF(raw);
            if (bad) goto done;
        }
        if (lit != last_lit || !starts) {
            PyObject *lk = PyLong_FromSsize_t(lit);
            if (!lk) goto done;
            starts = PyDict_GetItemWithError(by_literal, lk);
            if (!starts) {
                if (PyErr_Occurred() || !(starts = PyList_New(0)) || PyDict_SetItem(by_literal, lk, starts) < 0) {
                    Py_XDECREF(starts);
                    Py_DECREF(lk);
                    goto done;
                }
                Py_DECREF(starts); /* by_literal holds it */
            }
            Py_DECREF(lk);
            last_lit = lit;
        }
        Py_ssize_t size = PyList_GET_SIZE(starts);
        if (!size || PyLong_AsSsize_t(PyList_GET_ITEM(starts, size - 1)) != start) {
            PyObject *v = PyLong_FromSsize_t(start);
            if (!v || PyList_Append(starts, v) < 0) {
                Py_XDECREF(v);
                goto done;
            }
            Py_DECREF(v);
        }
    }
    result = PyTuple_Pack(3, ends, plain, by_literal);
done:
    Py_XDECREF(ends);
    Py_XDECREF(plain);
    Py_XDECREF(by_literal);
    PyBuffer_Release(&piece);
    return result;
}

static PyMethodDef methods[] = {
    {"group_lines", group_lines, METH_VARARGS, "The lines that hold a piece's literal matches (matcher._group_lines)."},
    {"readings", readings, METH_VARARGS, "The readings of each request on every line of a piece."},
    {"check", check, METH_VARARGS, "A numeric check over readings: its new state and where it fired."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "The matcher's loops in compiled code.", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
