package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/quick"
)

// ErrConfig is returned by New for an unusable Config.
var ErrConfig = errors.New("ui: invalid config")

// Config configures the console.
type Config struct {
	// Queue is the queue to show; required.
	Queue *quick.Queue
	// ReadOnly hides the actions and refuses every POST with 403.
	ReadOnly bool
	// Prefix is the path the handler is mounted under ("/queue"), so its
	// links and redirects point inside it. Empty means the root.
	Prefix string
	// Logger receives action records and errors; default discards.
	Logger *slog.Logger
	// Budget is the most keys a task type's count reads, across its
	// tenants' zones (quick.Queue.Depth); default 10,000. A count that hit
	// it is shown as a lower bound (≥N).
	Budget int
	// Refresh is how often pages refresh their live parts; default 2 s.
	Refresh time.Duration
	// SampleEvery is the period of the in-process history behind the
	// overview's charts (one hour of samples is kept); default 10 s. Zero
	// or negative with NoSampler set means no history.
	SampleEvery time.Duration
	// NoSampler turns the history sampler off (tests drive Sample).
	NoSampler bool
	// Clock is the time the console reads ages and samples on; default the
	// queue's clock.
	Clock clock.Clock
}

// Handler is the console. It is safe for concurrent use.
type Handler struct {
	cfg     Config
	q       *quick.Queue
	log     *slog.Logger
	clk     clock.Clock
	mux     *http.ServeMux
	guard   *http.CrossOriginProtection
	pages   pageSet
	hist    *history
	stop    context.CancelFunc
	done    chan struct{}
	closeMu sync.Once
}

// New returns the console for cfg. Call Close when done with it, to stop
// its history sampler.
func New(cfg Config) (*Handler, error) {
	if cfg.Queue == nil {
		return nil, fmt.Errorf("%w: no Queue", ErrConfig)
	}
	if cfg.Prefix != "" && (!strings.HasPrefix(cfg.Prefix, "/") || strings.HasSuffix(cfg.Prefix, "/")) {
		return nil, fmt.Errorf("%w: Prefix %q must start with / and not end with one", ErrConfig, cfg.Prefix)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 10_000
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = cfg.Queue.Options().Clock
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		cfg: cfg, q: cfg.Queue, log: cfg.Logger, clk: cfg.Clock, pages: pages,
		hist:  newHistory(time.Hour, cfg.SampleEvery),
		guard: http.NewCrossOriginProtection(),
		done:  make(chan struct{}),
	}
	h.routes()
	ctx, stop := context.WithCancel(context.Background())
	h.stop = stop
	if cfg.NoSampler {
		close(h.done)
	} else {
		go h.sampleLoop(ctx)
	}
	return h, nil
}

// Close stops the history sampler and waits for it.
func (h *Handler) Close() error {
	h.closeMu.Do(func() { h.stop() })
	<-h.done
	return nil
}

// ServeHTTP serves the console under Config.Prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Prefix != "" {
		p := strings.TrimPrefix(r.URL.Path, h.cfg.Prefix)
		if len(p) == len(r.URL.Path) || (p != "" && p[0] != '/') {
			http.NotFound(w, r)
			return
		}
		if p == "" {
			p = "/"
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = p
		r2.URL.RawPath = ""
		r = r2
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'")
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	m.Handle("GET /static/", http.StripPrefix("/static/", staticHandler()))
	m.HandleFunc("GET /{$}", h.overview)
	m.HandleFunc("GET /tenants", h.tenantsPage)
	m.HandleFunc("GET /zone", h.zonePage)
	m.HandleFunc("GET /lanes", func(w http.ResponseWriter, r *http.Request) {
		// The lanes page became a zone's lanes (issue 21): its zones are
		// found from the tenants page.
		http.Redirect(w, r, h.cfg.Prefix+"/tenants", http.StatusMovedPermanently)
	})
	m.HandleFunc("GET /jobs", h.jobsPage)
	m.HandleFunc("GET /jobs/{id}", h.jobPage)
	m.HandleFunc("GET /dead", h.deadPage)
	m.HandleFunc("GET /retries", h.retriesPage)
	m.HandleFunc("GET /cron", h.cronPage)
	m.HandleFunc("GET /workers", h.workersPage)
	m.Handle("POST /actions/{action}", h.guard.Handler(http.HandlerFunc(h.action)))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusNotFound, fmt.Errorf("no page at %s", r.URL.Path))
	})
	h.mux = m
}

// now is the console's clock reading.
func (h *Handler) now() time.Time { return h.clk.Now() }
