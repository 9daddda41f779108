package main

import (
	"strings"
	"testing"
)

func TestParseDirectory(t *testing.T) {
	p, err := parseDirectory("/app/ jobs//q/")
	if err != nil || strings.Join(p, "|") != "app|jobs|q" {
		t.Errorf("parseDirectory: %q %v", p, err)
	}
	if _, err := parseDirectory("/"); err == nil {
		t.Error("empty directory accepted")
	}
}
