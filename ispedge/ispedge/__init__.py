"""ispedge: an ISP's edge switch that lets each household place its own flows in one of
three queues (the household's priorities honoured at the backhaul's bottleneck)."""
