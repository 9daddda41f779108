package ui_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/ui"
)

// FuzzRequests: whatever the path, query and form, the console answers
// without panicking and with no 5xx (the database never fails here).
func FuzzRequests(f *testing.F) {
	f.Add("GET", "/jobs", "type=email&state=ready&limit=3", "")
	f.Add("GET", "/jobs/x", "", "")
	f.Add("GET", "/dead", "type=webhook&after=00ff", "")
	f.Add("GET", "/retries", "type=email&skip=3&limit=2", "")
	f.Add("GET", "/jobs", "type=email&skip=999999&after=T", "")
	f.Add("POST", "/actions/purge-dead", "", "type=webhook&older=1h&keep=2")
	f.Add("POST", "/actions/requeue-dead", "", "type=webhook&error=x&limit=5")
	f.Add("POST", "/actions/cancel", "", "id=0192f3c4-0000-7000-8000-000000000000&confirm=yes")
	f.Fuzz(func(t *testing.T, method, path, query, form string) {
		if method != "GET" && method != "POST" {
			method = "GET"
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		fx := newFixture(t, ui.Config{})
		fx.seed()
		u := &url.URL{Path: path, RawQuery: query}
		req := httptest.NewRequest(method, "http://console"+"/", strings.NewReader(form))
		req.URL = u
		req.RequestURI = ""
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		w := httptest.NewRecorder()
		fx.h.ServeHTTP(w, req)
		if w.Code >= 500 && w.Code != http.StatusNotImplemented {
			t.Fatalf("%s %s?%s form %q = %d: %s", method, path, query, form, w.Code, w.Body.String())
		}
	})
}
