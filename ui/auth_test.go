package ui_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/quickfdb/quickfdb/ui"
)

// TestAuthWrappers: BasicAuth, RequireToken and RequireAuth pass only the
// right credential, and an empty one refuses everything (fails closed).
func TestAuthWrappers(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	none := func(*http.Request) {}
	for _, c := range []struct {
		name string
		h    http.Handler
		req  func(*http.Request)
		want int
	}{
		{"basic right", ui.BasicAuth(ok, "ops", "pw"), basic("ops", "pw"), http.StatusTeapot},
		{"basic wrong password", ui.BasicAuth(ok, "ops", "pw"), basic("ops", "pW"), 401},
		{"basic wrong user", ui.BasicAuth(ok, "ops", "pw"), basic("opz", "pw"), 401},
		{"basic none", ui.BasicAuth(ok, "ops", "pw"), none, 401},
		{"basic empty config", ui.BasicAuth(ok, "", ""), basic("", ""), 401},
		{"token right", ui.RequireToken(ok, "tok-123"), bearer("tok-123"), http.StatusTeapot},
		{"token wrong", ui.RequireToken(ok, "tok-123"), bearer("tok-124"), 401},
		{"token as basic", ui.RequireToken(ok, "tok-123"), basic("tok-123", "tok-123"), 401},
		{"token empty config", ui.RequireToken(ok, ""), bearer(""), 401},
		{"either: basic", ui.RequireAuth(ok, ui.Credentials{User: "u", Password: "p", Token: "t"}), basic("u", "p"), http.StatusTeapot},
		{"either: token", ui.RequireAuth(ok, ui.Credentials{User: "u", Password: "p", Token: "t"}), bearer("t"), http.StatusTeapot},
		{"either: neither", ui.RequireAuth(ok, ui.Credentials{User: "u", Password: "p", Token: "t"}), basic("u", "t"), 401},
		{"nothing configured", ui.RequireAuth(ok, ui.Credentials{}), none, 401},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		c.req(req)
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, rec.Code, c.want)
		}
		if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without a challenge", c.name)
		}
	}
}
