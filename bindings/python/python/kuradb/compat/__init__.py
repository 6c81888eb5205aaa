"""Modules shaped like other databases' Python APIs, over kuradb."""
