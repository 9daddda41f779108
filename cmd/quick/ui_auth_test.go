package main

import (
	"net/http"
	"strings"
	"testing"
)

// getAuth is a GET with an Authorization set by set (nil: none).
func getAuth(t *testing.T, u string, set func(*http.Request)) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(req)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return r
}

// TestUIRefusesOpenAddressWithoutCredential: on an address other than
// loopback, quick ui does not start without a credential or --behind-auth.
func TestUIRefusesOpenAddressWithoutCredential(t *testing.T) {
	h := newHarness(t)
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "192.0.2.7:8080", "queue.example.com:8080"} {
		h.fails("refusing to serve the console on "+addr+" without a credential", "ui", "--listen", addr)
	}
}

func TestUICredentialFlagsChecked(t *testing.T) {
	h := newHarness(t)
	h.fails("--user and --password go together", "ui", "--user", "ops")
	h.fails("--user and --password go together", "ui", "--password", "secret")
	h.fails("no ':' in a user name", "ui", "--user", "a:b", "--password", "secret")
	h.fails("invalid --token: 5 characters, want at least 16", "ui", "--token", "short")
	h.fails("not both", "ui", "--behind-auth", "--token", strings.Repeat("t", 16))
}

func TestLoopbackListen(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.2:1": true, "[::1]:8080": true, "localhost:8080": true, "LOCALHOST:1": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.0.0.1:8080": false, "example.com:80": false,
		"127.0.0.1": false, "": false,
	} {
		if got := loopbackListen(addr); got != want {
			t.Errorf("loopbackListen(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestUIBasicAuth: with --user and --password every path asks for them
// (the console and /metrics), and only the right pair passes.
func TestUIBasicAuth(t *testing.T) {
	h := newHarness(t)
	h.ok("enqueue", "-t", "email", "--payload", "hi")
	base, stop := startUI(t, h, "ui", "--user", "ops", "--password", "s3cret-pass")
	defer stop()
	for _, p := range []string{"/", "/jobs?type=email", "/metrics"} {
		r := getAuth(t, base+p, nil)
		if r.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("GET %s without credentials = %d %q, want 401 with a basic challenge", p, r.StatusCode, r.Header.Get("WWW-Authenticate"))
		}
	}
	for _, bad := range [][2]string{{"ops", "wrong"}, {"op", "s3cret-pass"}, {"", ""}, {"ops", "s3cret-pass "}} {
		if r := getAuth(t, base+"/", func(q *http.Request) { q.SetBasicAuth(bad[0], bad[1]) }); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("basic auth %q: %d, want 401", bad, r.StatusCode)
		}
	}
	if r := getAuth(t, base+"/", func(q *http.Request) { q.Header.Set("Authorization", "Bearer s3cret-pass") }); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a bearer token where basic auth is asked: %d, want 401", r.StatusCode)
	}
	for _, p := range []string{"/", "/metrics"} {
		if r := getAuth(t, base+p, func(q *http.Request) { q.SetBasicAuth("ops", "s3cret-pass") }); r.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the right credentials = %d, want 200", p, r.StatusCode)
		}
	}
}

// TestUIBearerToken: with --token a request passes with the token alone.
func TestUIBearerToken(t *testing.T) {
	h := newHarness(t)
	token := "0123456789abcdef-token"
	base, stop := startUI(t, h, "ui", "--token", token)
	defer stop()
	if r := getAuth(t, base+"/", nil); r.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("no token: %d %q, want 401 with a bearer challenge", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	for _, bad := range []string{"Bearer wrong", "Bearer " + token + "x", "Basic " + token, token} {
		if r := getAuth(t, base+"/", func(q *http.Request) { q.Header.Set("Authorization", bad) }); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", bad, r.StatusCode)
		}
	}
	if r := getAuth(t, base+"/", func(q *http.Request) { q.Header.Set("Authorization", "Bearer "+token) }); r.StatusCode != http.StatusOK {
		t.Errorf("the right token: %d, want 200", r.StatusCode)
	}
}

// TestUIOpenAddressWithCredentialsFromEnv: the credentials may come from
// the environment, and then an open address serves (asking for them).
func TestUIOpenAddressWithCredentialsFromEnv(t *testing.T) {
	t.Setenv("QUICK_UI_USER", "ops")
	t.Setenv("QUICK_UI_PASSWORD", "from-the-env")
	h := newHarness(t)
	base, stop := startUIOn(t, h, "0.0.0.0:0", "ui")
	defer stop()
	if r := getAuth(t, base+"/", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", r.StatusCode)
	}
	if r := getAuth(t, base+"/", func(q *http.Request) { q.SetBasicAuth("ops", "from-the-env") }); r.StatusCode != http.StatusOK {
		t.Errorf("the environment's credentials: %d, want 200", r.StatusCode)
	}
}

// TestUIBehindAuth: --behind-auth serves an open address without asking
// (the user's proxy does).
func TestUIBehindAuth(t *testing.T) {
	h := newHarness(t)
	base, stop := startUIOn(t, h, "0.0.0.0:0", "ui", "--behind-auth", "--read-only")
	defer stop()
	if r := getAuth(t, base+"/", nil); r.StatusCode != http.StatusOK {
		t.Errorf("--behind-auth: %d, want 200", r.StatusCode)
	}
}
