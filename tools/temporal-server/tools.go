//go:build tools

// Package tools pins the Temporal server commands this module builds: the server itself and its
// SQL schema tool (temporal-sql-tool).
package tools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
