package killcheck

import (
	"context"
	"fmt"
	"io"
)

// Usage is the command's usage.
const Usage = `usage: killcheck run [flags]       run the scenarios (needs -tags fdb)
       killcheck worker [flags]    a worker process (the scenarios start it)
       killcheck produce [flags]   the producer process (the scenarios start it)
Each takes -help.`

// Main dispatches the command line to a role.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", Usage)
	}
	switch args[0] {
	case "run":
		return RunMain(ctx, args[1:], stdout, stderr)
	case "worker":
		return WorkerMain(ctx, args[1:], stdout, stderr)
	case "produce":
		return ProduceMain(ctx, args[1:], stdout, stderr)
	default:
		return fmt.Errorf("unknown role %q\n%s", args[0], Usage)
	}
}
