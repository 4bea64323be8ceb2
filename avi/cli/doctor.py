"""``avi doctor`` and ``avi config``: check the install for its profile; show the effective settings."""

from __future__ import annotations

import json

from avi.cli.common import settings_from_args


def cmd_doctor(args) -> int:
    """Check the install for its profile (packages, GPUs, detectors, weights, endpoints serving the expected
    models, one forced tool call, the offline switches); print a table; exit 1 on any failure."""
    from avi.doctor import format_table, run_doctor

    settings = settings_from_args(args)
    rows = run_doctor(settings, serve=args.serve)
    print(format_table(rows))
    failed = [r for r in rows if r.status == "FAIL"]
    verdict = f"{len(failed)} of {len(rows)} checks failed" if failed else f"all {len(rows)} checks passed"
    print(f"profile: {settings.resolved_profile()}  config: {settings.config_path or 'none'}  models: "
          f"{settings.models_dir}  indexes: {settings.indexes_dir()}  —  {verdict}")
    return 1 if failed else 0


def cmd_config(args) -> int:
    """Print the effective settings (TOML, or JSON with --json) and where each non-default value came from."""
    settings = settings_from_args(args)
    if args.json:
        print(json.dumps({"config_file": str(settings.config_path) if settings.config_path else None,
                          "profile": settings.resolved_profile(), "settings": settings.model_dump(mode="json"),
                          "sources": settings.sources()}, indent=2))
    else:
        print(settings.to_toml(), end="")
    return 0
