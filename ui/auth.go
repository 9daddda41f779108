package ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/quickfdb/quickfdb/internal/mutant"
)

// The console has no login of its own: it is an http.Handler, and a service
// that mounts it puts it behind its own middleware. These wrappers are for
// those that have none (quick ui uses them on a non-loopback address): HTTP
// basic auth, a bearer token, or either. Every comparison is in constant
// time (crypto/subtle) over SHA-256 digests, so neither a credential's
// content nor its length shows in the time a refusal takes.

// Credentials are what RequireAuth accepts: a user and password (HTTP basic
// auth), a bearer token (Authorization: Bearer …), or both (either one
// passes). An empty Credentials refuses every request.
type Credentials struct {
	User, Password string
	Token          string
}

// BasicAuth serves next only to requests with HTTP basic auth of user and
// password; others get 401 with a WWW-Authenticate challenge. With an empty
// user or password it refuses every request.
func BasicAuth(next http.Handler, user, password string) http.Handler {
	return RequireAuth(next, Credentials{User: user, Password: password})
}

// RequireToken serves next only to requests with the header
// "Authorization: Bearer <token>"; others get 401. With an empty token it
// refuses every request.
func RequireToken(next http.Handler, token string) http.Handler {
	return RequireAuth(next, Credentials{Token: token})
}

// RequireAuth serves next only to requests that present one of c's
// credentials; others get 401 (with a basic-auth challenge when c has a
// user and password, so that a browser asks for them).
func RequireAuth(next http.Handler, c Credentials) http.Handler {
	basic := c.User != "" && c.Password != ""
	bearer := c.Token != ""
	user, pass, token := digest(c.User), digest(c.Password), digest(c.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := false
		if basic {
			if u, p, has := r.BasicAuth(); has {
				// Both compared, whatever the first says: the time taken
				// does not tell which one was wrong.
				uo := subtle.ConstantTimeCompare(digest(u), user)
				po := subtle.ConstantTimeCompare(digest(p), pass)
				ok = uo&po == 1
			}
		}
		if bearer && !ok {
			if t, has := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); has {
				ok = subtle.ConstantTimeCompare(digest(strings.TrimSpace(t)), token) == 1
			}
		}
		if mutant.On("ui.auth-open") {
			ok = true
		}
		if !ok {
			if basic {
				w.Header().Set("WWW-Authenticate", `Basic realm="quickfdb console", charset="UTF-8"`)
			} else {
				w.Header().Set("WWW-Authenticate", `Bearer realm="quickfdb console"`)
			}
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, "401 unauthorized: this console asks for credentials", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func digest(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}
