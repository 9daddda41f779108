package tuple

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidPrefix is wrapped by every ParsePrefix error.
var ErrInvalidPrefix = errors.New("invalid subspace")

// ParsePrefix reads a tuple written as text, the syntax of the CLI's
// --subspace flag and the worker binaries' -subspace flag: a tuple of strings and
// integers, written either bare or in parentheses.
//
//	quick                  ("quick",)
//	app,jobs               ("app", "jobs")
//	("app", "jobs", 7)     ("app", "jobs", 7)
//	(app, "a,b", -1,)      ("app", "a,b", -1)  a trailing comma is allowed
//	my app, 1.5            ("my app", "1.5")
//
// Elements are separated by commas. A double-quoted element is a Go string
// literal (\", \\, \n, \x00, \u00e9 escapes; it may hold commas and
// parentheses). A bare element runs to the next comma or ')', spaces around
// it trimmed: digits with an optional sign make an int64, anything else a
// string. It rejects a quote or '(' inside a bare element, an unbalanced
// parenthesis and an integer over 64 bits; errors wrap ErrInvalidPrefix and
// name the offset.
func ParsePrefix(s string) (Tuple, error) {
	p := &subParser{s: s}
	t, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidPrefix, s, err)
	}
	return t, nil
}

type subParser struct {
	s   string
	pos int
}

func (p *subParser) parse() (Tuple, error) {
	p.skipSpace()
	if p.pos == len(p.s) {
		return nil, fmt.Errorf("empty (a queue needs a prefix, e.g. quick or (\"app\",\"jobs\"))")
	}
	paren := p.s[p.pos] == '('
	if paren {
		p.pos++
	}
	var t Tuple
	expectElem := true
	for {
		p.skipSpace()
		if p.pos == len(p.s) {
			if paren {
				return nil, fmt.Errorf("missing ')' at end")
			}
			break
		}
		c := p.s[p.pos]
		if paren && c == ')' {
			p.pos++
			break
		}
		if !expectElem {
			if c != ',' {
				return nil, fmt.Errorf("unexpected %q at offset %d (elements are separated by ',')", c, p.pos)
			}
			p.pos++
			expectElem = true
			continue
		}
		if c == ',' {
			return nil, fmt.Errorf("empty element at offset %d", p.pos)
		}
		el, err := p.element()
		if err != nil {
			return nil, err
		}
		t = append(t, el)
		expectElem = false
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return nil, fmt.Errorf("unexpected %q after ')' at offset %d", p.s[p.pos:], p.pos)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("empty tuple (a queue needs a prefix)")
	}
	return t, nil
}

func (p *subParser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

// skipSpace skips Unicode white space, as strings.TrimSpace does.
func (p *subParser) skipSpace() {
	for p.pos < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		p.pos += n
	}
}

func (p *subParser) element() (any, error) {
	start := p.pos
	if p.s[p.pos] == '"' {
		// Find the closing quote, honouring backslash escapes.
		i := p.pos + 1
		for ; i < len(p.s); i++ {
			if p.s[i] == '\\' {
				i++
				continue
			}
			if p.s[i] == '"' {
				break
			}
		}
		if i >= len(p.s) {
			return nil, fmt.Errorf("unterminated string at offset %d", start)
		}
		str, err := strconv.Unquote(p.s[start : i+1])
		if err != nil {
			return nil, fmt.Errorf("bad string %s at offset %d: %v", p.s[start:i+1], start, err)
		}
		p.pos = i + 1
		return str, nil
	}
	// A bare element runs to the next ',' or ')': an integer if it reads as
	// one, else a string (as workermain.ParseSubspace reads it).
	i := p.pos
	for i < len(p.s) && p.s[i] != ',' && p.s[i] != ')' {
		if p.s[i] == '"' || p.s[i] == '(' {
			return nil, fmt.Errorf("unexpected %q at offset %d (quote the whole element: \"a b\")", p.s[i], i)
		}
		i++
	}
	p.pos = i
	word := strings.TrimRightFunc(p.s[start:i], unicode.IsSpace)
	if intRE.MatchString(word) {
		n, err := strconv.ParseInt(word, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %q at offset %d (want a 64-bit integer; quote it for a string)", word, start)
		}
		return n, nil
	}
	return word, nil
}

var intRE = regexp.MustCompile(`^[+-]?[0-9]+$`)
