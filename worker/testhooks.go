package worker

import "github.com/quickfdb/quickfdb/internal/testhooks"

func init() {
	testhooks.KillWorker = func(w any) { w.(*Worker).kill() }
}
