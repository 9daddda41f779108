package cron

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
)

func TestMain(m *testing.M) { fdbtest.Main(m) }

// epoch starts the tests' fake clocks, far from any DST transition.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
