package ui

import (
	"bytes"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/quick"
)

//go:embed assets templates
var files embed.FS

func staticHandler() http.Handler {
	sub, _ := fs.Sub(files, "assets")
	fsrv := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		fsrv.ServeHTTP(w, r)
	})
}

// pageSet holds one template per page, each the layout plus the page.
type pageSet map[string]*template.Template

var pageNames = []string{"overview", "tenants", "zone", "jobs", "job", "dead", "retries", "cron", "workers", "confirm", "error"}

func parsePages() (pageSet, error) {
	ps := pageSet{}
	for _, n := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/partials.html", "templates/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", n, err)
		}
		ps[n] = t
	}
	return ps, nil
}

// page is what every page's template gets besides its own data.
type page struct {
	Title    string
	Nav      string
	Base     string
	ReadOnly bool
	Refresh  int64 // ms; 0: the page does not refresh
	Now      time.Time
	Flash    string
	FlashErr bool
	// Self is the page's path and query inside the console, where an
	// action returns to.
	Self string
	Data any
}

// render writes a page, or a 500 if its template fails (rendered into a
// buffer first, so a half page never goes out).
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, live bool, data any) {
	p := page{Title: title, Nav: name, Base: h.cfg.Prefix, ReadOnly: h.cfg.ReadOnly, Now: h.now(), Data: data,
		Self: r.URL.RequestURI(), Flash: r.URL.Query().Get("done"), FlashErr: r.URL.Query().Get("failed") != ""}
	if p.FlashErr {
		p.Flash = r.URL.Query().Get("failed")
	}
	if live {
		p.Refresh = h.cfg.Refresh.Milliseconds()
	}
	var buf bytes.Buffer
	if err := h.pages[name].Execute(&buf, p); err != nil {
		h.log.Error("ui: render", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// errorData is the error page's data.
type errorData struct {
	Status int
	Text   string
	Err    string
}

// fail renders an error page: 4xx for bad input, 404 for what is not there,
// 500 for the database's failures.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status >= 500 {
		h.log.Error("ui: request failed", "path", r.URL.Path, "err", err)
	}
	h.render(w, r, status, "error", http.StatusText(status), false, errorData{Status: status, Text: http.StatusText(status), Err: err.Error()})
}

// statusOf maps a library error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, quick.ErrNotFound), errors.Is(err, errNoAction), errors.Is(err, cron.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, quick.ErrInvalidTaskType), errors.Is(err, quick.ErrInvalidOption), errors.Is(err, quick.ErrInvalidID), errors.Is(err, quick.ErrInvalidPriority),
		errors.Is(err, quick.ErrInvalidCursor):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

var funcs = template.FuncMap{
	"age": func(t, now time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return present.Age(now.Sub(t))
	},
	"rel": func(t, now time.Time) string {
		if t.IsZero() {
			return "-"
		}
		if t.After(now) {
			return "in " + present.Age(t.Sub(now))
		}
		return present.Age(now.Sub(t)) + " ago"
	},
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"count": func(n any, exact bool) string {
		s := fmt.Sprint(n)
		if !exact {
			return "≥" + s
		}
		return s
	},
	"short": func(id quick.ID) string {
		s := id.String()
		if len(s) > 13 {
			return s[:8] + "…" + s[len(s)-4:]
		}
		return s
	},
	"trunc": func(n int, s string) string {
		if utf8.RuneCountInString(s) <= n {
			return s
		}
		return string([]rune(s)[:n-1]) + "…"
	},
	"args": showArgs,
	"itoa": strconv.Itoa,
	"add":  func(a, b int) int { return a + b },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
}

// showArgs is a job's payload in a listing: its text (JSON included) with
// runs of white space folded, or a hex prefix when it is not text, at most
// n characters.
func showArgs(n int, b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	if len(b) > 4*n {
		b = b[:4*n] // enough for n characters; the cut is marked below
	}
	var s string
	if present.IsText(b) {
		s = strings.Join(strings.Fields(string(b)), " ")
	} else {
		s = "0x" + hex.EncodeToString(b[:min(len(b), n/2)])
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
