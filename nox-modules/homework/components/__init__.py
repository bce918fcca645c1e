"""Controller components, one package per domain (dhcp, routing, dns, eapol, hwdb_sync, api).
Each package exposes COMPONENT, the class the core instantiates."""
