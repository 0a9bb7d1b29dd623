// Made by test/unit/tool-json-schemas.test.ts (UPDATE_TOOL_SCHEMAS=1 npx vitest run test/unit/tool-json-schemas.test.ts):
// each built-in tool's zod parameters as JSON Schema, so a start does not convert them (src/tools/contract.ts).
export const BUILTIN_JSON_SCHEMAS: Readonly<Record<string, Record<string, unknown>>> = {
  "read_file": {
    "type": "object",
    "properties": {
      "path": {
        "type": "string",
        "description": "File path, relative to the workspace or absolute"
      },
      "offset": {
        "description": "Line number to start from (1-based, default 1)",
        "type": "integer",
        "minimum": 1,
        "maximum": 9007199254740991
      },
      "limit": {
        "description": "Number of lines to read (default 2000)",
        "type": "integer",
        "minimum": 1,
        "maximum": 10000
      },
      "pages": {
        "description": "PDF only: pages to read, e.g. '1-5' or '1-3,7' (default all, at most 20 per call)",
        "type": "string"
      },
      "force": {
        "description": "Accepted for nanobot compatibility: troupe always returns the content",
        "type": "boolean"
      }
    },
    "required": [
      "path"
    ]
  },
  "write_file": {
    "type": "object",
    "properties": {
      "path": {
        "type": "string",
        "description": "File path, relative to the workspace or absolute"
      },
      "content": {
        "type": "string",
        "description": "The complete file content"
      }
    },
    "required": [
      "path",
      "content"
    ]
  },
  "edit_file": {
    "type": "object",
    "properties": {
      "path": {
        "type": "string",
        "description": "File path, relative to the workspace or absolute"
      },
      "old_text": {
        "type": "string",
        "description": "The text to replace, copied from read_file (whitespace included). An empty old_text creates the file (or fills an empty one) with new_text"
      },
      "new_text": {
        "type": "string",
        "description": "Replacement text"
      },
      "occurrence": {
        "description": "Which match to replace (1-based) when old_text occurs several times",
        "anyOf": [
          {
            "type": "integer",
            "minimum": 1,
            "maximum": 9007199254740991
          },
          {
            "type": "null"
          }
        ]
      },
      "line_hint": {
        "description": "The 1-based line (from read_file's numbering) the match must cover; picks among several matches",
        "anyOf": [
          {
            "type": "integer",
            "minimum": 1,
            "maximum": 9007199254740991
          },
          {
            "type": "null"
          }
        ]
      },
      "replace_all": {
        "description": "Replace every occurrence",
        "type": [
          "boolean",
          "null"
        ]
      },
      "expected_replacements": {
        "description": "The number of replacements that must be made; the edit is refused otherwise",
        "anyOf": [
          {
            "type": "integer",
            "minimum": 1,
            "maximum": 9007199254740991
          },
          {
            "type": "null"
          }
        ]
      }
    },
    "required": [
      "path",
      "old_text",
      "new_text"
    ]
  },
  "list_dir": {
    "type": "object",
    "properties": {
      "path": {
        "default": ".",
        "description": "Directory, relative to the workspace or absolute",
        "type": "string"
      },
      "recursive": {
        "default": false,
        "type": "boolean"
      },
      "max_entries": {
        "default": 200,
        "type": "integer",
        "minimum": 1,
        "maximum": 2000
      }
    }
  },
  "glob": {
    "type": "object",
    "properties": {
      "pattern": {
        "type": "string",
        "minLength": 1,
        "description": "Glob pattern, e.g. '*.py' (any depth) or 'tests/**/test_*.py'"
      },
      "path": {
        "default": ".",
        "description": "Directory to search from (default '.')",
        "type": "string"
      },
      "head_limit": {
        "description": "Most paths to return (default 250, 0 for all)",
        "type": "integer",
        "minimum": 0,
        "maximum": 1000
      },
      "offset": {
        "default": 0,
        "description": "Skip the first N matching paths before head_limit",
        "type": "integer",
        "minimum": 0,
        "maximum": 100000
      },
      "entry_type": {
        "default": "files",
        "description": "Match files, directories, or both (default files)",
        "type": "string",
        "enum": [
          "files",
          "dirs",
          "both"
        ]
      },
      "max_results": {
        "description": "Legacy alias for head_limit",
        "type": "integer",
        "minimum": 1,
        "maximum": 1000
      }
    },
    "required": [
      "pattern"
    ]
  },
  "grep": {
    "type": "object",
    "properties": {
      "pattern": {
        "type": "string",
        "minLength": 1,
        "description": "Regular expression (JavaScript syntax), or plain text with fixed_strings"
      },
      "path": {
        "default": ".",
        "description": "File or directory to search (default '.')",
        "type": "string"
      },
      "glob": {
        "description": "Which files to search, e.g. '*.py' (any depth) or 'tests/**/test_*.py'",
        "type": "string"
      },
      "type": {
        "description": "File type shorthand, e.g. 'py', 'ts', 'md', 'json' (any other value is an extension)",
        "type": "string"
      },
      "case_insensitive": {
        "default": false,
        "type": "boolean"
      },
      "fixed_strings": {
        "default": false,
        "description": "Take pattern as plain text, not a regular expression",
        "type": "boolean"
      },
      "output_mode": {
        "default": "files_with_matches",
        "description": "files_with_matches (default): paths only; content: matching lines with context; count: matches per file",
        "type": "string",
        "enum": [
          "files_with_matches",
          "content",
          "count"
        ]
      },
      "context_before": {
        "description": "Lines of context before each match (content mode)",
        "type": "integer",
        "minimum": 0,
        "maximum": 20
      },
      "context_after": {
        "description": "Lines of context after each match (content mode)",
        "type": "integer",
        "minimum": 0,
        "maximum": 20
      },
      "-B": {
        "description": "Same as context_before",
        "type": "integer",
        "minimum": 0,
        "maximum": 20
      },
      "-A": {
        "description": "Same as context_after",
        "type": "integer",
        "minimum": 0,
        "maximum": 20
      },
      "-C": {
        "description": "Lines of context before and after each match",
        "type": "integer",
        "minimum": 0,
        "maximum": 20
      },
      "context": {
        "description": "Same as -C",
        "type": "integer",
        "minimum": 0,
        "maximum": 20
      },
      "head_limit": {
        "description": "Most results: match blocks in content mode, files otherwise (default 250, 0 for all)",
        "type": "integer",
        "minimum": 0,
        "maximum": 1000
      },
      "offset": {
        "default": 0,
        "description": "Skip the first N results before head_limit",
        "type": "integer",
        "minimum": 0,
        "maximum": 100000
      },
      "max_matches": {
        "description": "Legacy alias for head_limit in content mode",
        "type": "integer",
        "minimum": 1,
        "maximum": 1000
      },
      "max_results": {
        "description": "Legacy alias for head_limit in the other modes",
        "type": "integer",
        "minimum": 1,
        "maximum": 1000
      }
    },
    "required": [
      "pattern"
    ]
  },
  "exec": {
    "type": "object",
    "properties": {
      "command": {
        "type": "string",
        "minLength": 1
      },
      "working_dir": {
        "description": "Directory to run in (default: the workspace)",
        "type": "string"
      },
      "timeout": {
        "type": "integer",
        "minimum": 1,
        "maximum": 600
      }
    },
    "required": [
      "command"
    ]
  },
  "web_fetch": {
    "type": "object",
    "properties": {
      "url": {
        "type": "string",
        "minLength": 1,
        "description": "URL to fetch"
      },
      "extractMode": {
        "default": "markdown",
        "type": "string",
        "enum": [
          "markdown",
          "text"
        ]
      },
      "maxChars": {
        "type": "integer",
        "minimum": 100,
        "maximum": 9007199254740991
      },
      "max_chars": {
        "type": "integer",
        "minimum": 100,
        "maximum": 9007199254740991
      }
    },
    "required": [
      "url"
    ]
  },
  "web_search": {
    "type": "object",
    "properties": {
      "query": {
        "type": "string",
        "minLength": 1,
        "description": "Search query"
      },
      "count": {
        "description": "Results (1-10)",
        "type": "integer",
        "minimum": 1,
        "maximum": 10
      }
    },
    "required": [
      "query"
    ]
  },
  "message": {
    "type": "object",
    "properties": {
      "content": {
        "type": "string",
        "minLength": 1
      },
      "channel": {
        "description": "Target channel (default: the current one)",
        "type": "string"
      },
      "chat_id": {
        "description": "Target chat (default: the current one)",
        "type": "string"
      },
      "media": {
        "description": "Files to attach: workspace paths, or http(s) URLs passed on as they are",
        "type": "array",
        "items": {
          "type": "string"
        }
      }
    },
    "required": [
      "content"
    ]
  },
  "spawn": {
    "type": "object",
    "properties": {
      "task": {
        "type": "string",
        "minLength": 1,
        "description": "The complete task, with all the context it needs"
      },
      "label": {
        "description": "A short name for the task",
        "type": "string",
        "minLength": 1,
        "maxLength": 60
      },
      "wait": {
        "default": false,
        "description": "Wait for the result instead of returning at once",
        "type": "boolean"
      },
      "temperature": {
        "description": "Sampling temperature for the subagent (0 = deterministic, higher = more varied); the configured one when left out",
        "type": "number",
        "minimum": 0,
        "maximum": 2
      }
    },
    "required": [
      "task"
    ]
  },
  "subagents": {
    "type": "object",
    "properties": {
      "action": {
        "default": "list",
        "type": "string",
        "enum": [
          "list",
          "cancel"
        ]
      },
      "id": {
        "description": "The subagent to cancel",
        "type": "string"
      }
    }
  },
  "cron": {
    "type": "object",
    "properties": {
      "action": {
        "type": "string",
        "enum": [
          "add",
          "list",
          "remove"
        ],
        "description": "Action to perform"
      },
      "name": {
        "description": "Optional short label for the job; defaults to the first 30 characters of message",
        "type": "string"
      },
      "message": {
        "description": "REQUIRED for add: what the agent should do (or remind of) when the job runs",
        "type": "string"
      },
      "every_seconds": {
        "description": "Interval in seconds (recurring), 1 to 315360000 (10 years)",
        "type": "number"
      },
      "cron_expr": {
        "description": "Cron expression like '0 9 * * *' (recurring)",
        "type": "string"
      },
      "tz": {
        "description": "IANA timezone for cron_expr or a naive at, e.g. 'America/Vancouver'",
        "type": "string"
      },
      "at": {
        "description": "ISO datetime for one run, e.g. '2026-02-12T10:30:00'; the job is deleted after it runs",
        "type": "string"
      },
      "deliver": {
        "description": "Send each run's reply to this chat (default true)",
        "type": "boolean"
      },
      "catch_up": {
        "description": "Runs missed while troupe was down: once (default), skip, or all (at most 10)",
        "type": "string",
        "enum": [
          "once",
          "skip",
          "all"
        ]
      },
      "job_id": {
        "description": "REQUIRED for remove: the job's id (see action=list)",
        "type": "string"
      }
    },
    "required": [
      "action"
    ]
  }
};
