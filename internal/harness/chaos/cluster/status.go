package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Status is the part of `fdbcli --exec "status json"` the cluster helpers
// read (schema: fdbclient/Schemas.cpp in FoundationDB 7.3).
type Status struct {
	Client struct {
		DatabaseStatus struct {
			Available bool `json:"available"`
			Healthy   bool `json:"healthy"`
		} `json:"database_status"`
		Coordinators struct {
			Coordinators []struct {
				Address   string `json:"address"`
				Reachable bool   `json:"reachable"`
			} `json:"coordinators"`
			QuorumReachable bool `json:"quorum_reachable"`
		} `json:"coordinators"`
		Messages []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"messages"`
	} `json:"client"`
	Cluster struct {
		RecoveryState struct {
			Name string `json:"name"`
		} `json:"recovery_state"`
		Data struct {
			State struct {
				Healthy bool   `json:"healthy"`
				Name    string `json:"name"`
			} `json:"state"`
		} `json:"data"`
		Processes map[string]ProcessStatus `json:"processes"`
		Messages  []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"messages"`
	} `json:"cluster"`
}

// ProcessStatus is one fdbserver process in status json.
type ProcessStatus struct {
	Address  string `json:"address"`
	Excluded bool   `json:"excluded"`
	Class    string `json:"class_type"`
	Roles    []struct {
		Role string `json:"role"`
	} `json:"roles"`
}

// Role names of status json's processes.*.roles[].role that the chaos run
// kills the holder of.
const (
	RoleClusterController = "cluster_controller"
	RoleLog               = "log"
	RoleStorage           = "storage"
	RoleMaster            = "master"
)

// ErrBadStatus is returned for output that is not status json.
var ErrBadStatus = errors.New("cluster: not a status json document")

// ParseStatus decodes status json. fdbcli may print a line before the
// document (a warning); everything before the first '{' is skipped.
func ParseStatus(b []byte) (*Status, error) {
	i := strings.IndexByte(string(b), '{')
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrBadStatus, truncate(string(b), 200))
	}
	var s Status
	if err := json.Unmarshal(b[i:], &s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadStatus, err)
	}
	return &s, nil
}

// Healthy says whether the database is available, fully recovered and
// its data fully replicated (cluster.data.state.healthy); why names what
// is not. It does not ask for client.database_status.healthy, which any
// message of any process (a storage server lagging for a moment on a
// loaded machine) turns false (getClientDatabaseStatus in
// fdbclient/StatusClient.actor.cpp); those are listed by Messages.
func (s *Status) Healthy() (ok bool, why string) {
	var not []string
	if !s.Client.DatabaseStatus.Available {
		not = append(not, "database unavailable")
	}
	if r := s.Cluster.RecoveryState.Name; r != "fully_recovered" {
		not = append(not, "recovery state "+orNone(r))
	}
	if !s.Cluster.Data.State.Healthy {
		not = append(not, "data state "+orNone(s.Cluster.Data.State.Name))
	}
	return len(not) == 0, strings.Join(not, ", ")
}

// Messages lists the client's and the cluster's messages by name.
func (s *Status) Messages() []string {
	var out []string
	for _, m := range s.Client.Messages {
		out = append(out, "client: "+m.Name)
	}
	for _, m := range s.Cluster.Messages {
		out = append(out, "cluster: "+m.Name)
	}
	return out
}

// Available says whether the database accepts transactions (it may still
// be healing).
func (s *Status) Available() bool {
	return s.Client.DatabaseStatus.Available && s.Cluster.RecoveryState.Name != ""
}

// HoldersOf returns the addresses (ip:port, without a :tls suffix) of the
// processes holding role, sorted.
func (s *Status) HoldersOf(role string) []string {
	var out []string
	for _, p := range s.Cluster.Processes {
		for _, r := range p.Roles {
			if r.Role == role {
				out = append(out, plainAddr(p.Address))
				break
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RolesOf returns the roles of the process at addr, sorted.
func (s *Status) RolesOf(addr string) []string {
	var out []string
	for _, p := range s.Cluster.Processes {
		if plainAddr(p.Address) != addr {
			continue
		}
		for _, r := range p.Roles {
			out = append(out, r.Role)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Coordinators returns the coordinators' addresses, sorted.
func (s *Status) Coordinators() []string {
	var out []string
	for _, c := range s.Client.Coordinators.Coordinators {
		out = append(out, plainAddr(c.Address))
	}
	slices.Sort(out)
	return out
}

// Excluded returns the addresses of the processes status shows excluded.
func (s *Status) Excluded() []string {
	var out []string
	for _, p := range s.Cluster.Processes {
		if p.Excluded {
			out = append(out, plainAddr(p.Address))
		}
	}
	slices.Sort(out)
	return out
}

func plainAddr(a string) string { return strings.TrimSuffix(a, ":tls") }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
