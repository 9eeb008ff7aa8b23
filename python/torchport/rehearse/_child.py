"""Imported first by a child process started with the 'spawn' method under rehearsal (runtime._patch_spawn):
turns the rehearsal device on in the child before it imports the main script."""

from torchport.rehearse import runtime, summary

if runtime.activate_from_env() is not None:
    summary.install_exit_summary(child=True)
