"""Run records (simulator.md §5): the live writer and the strict streaming reader."""
