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
    """Print the effective settings (TOML, or JSON with --json) and where each non-default value came from, then
    where the in-process models run on this machine (``auto`` devices and dtypes resolved)."""
    from avi.backends.devices import ROLES, placement
    from avi.errors import AviError

    settings = settings_from_args(args)
    if args.json:
        where = {}
        for role in ROLES:  # what "auto" means on this machine
            try:
                where[role] = dict(zip(("device", "dtype"), placement(settings, role)))
            except AviError as exc:
                where[role] = {"error": str(exc)}
        print(json.dumps({"config_file": str(settings.config_path) if settings.config_path else None,
                          "profile": settings.resolved_profile(), "settings": settings.model_dump(mode="json"),
                          "sources": settings.sources(), "placement": where,
                          "answer_rules_in_effect": list(settings.answer_rule_names()),
                          "host_steps_on": [k for k, (off, _) in __import__("avi.config_agent", fromlist=["x"])
                                            .HOST_STEPS.items() if getattr(settings, k) != off]}, indent=2))
    else:
        from avi.agent.rules import RULES
        from avi.backends.devices import placement_lines

        print(settings.to_toml(), end="")
        on = set(settings.answer_rule_names())
        from avi.config_agent import HOST_STEPS

        print("\n".join(["", *placement_lines(settings), "",
                         "# host steps not in AVI's Algorithm 1 (each with its switch; --preset paper turns every one "
                         "off):"]
                        + [f"#   [{'x' if getattr(settings, k) != off else ' '}] {k} = {getattr(settings, k)!r}: {about}"
                           for k, (off, about) in HOST_STEPS.items()]
                        + ["", f"# answer rules (answer_rules = {settings.answer_rules!r}, "
                           f"profile {settings.resolved_profile()}; applied in this order):"]
                        + [f"#   [{'x' if r.name in on else ' '}] {r.name} ({r.stage}): {r.about}" for r in RULES]))
    return 0
