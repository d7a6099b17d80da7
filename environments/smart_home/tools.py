"""A smart-home hub serving many households: homes with security modes, rooms, devices with typed state
(lights, thermostats, door locks, blinds, smart plugs), saved scenes and an event log."""
from typing import Literal

from pydantic import Field

from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool

MIN_TARGET_C, MAX_TARGET_C = 7.0, 30.0
MIN_LOCK_BATTERY = 5          # a lock motor will not run below this battery level
LOW_BATTERY = 20
MAX_SCENES_PER_HOME = 12
SECURE_MODES = ('away', 'night', 'vacation')

HomeMode = Literal['home', 'away', 'night', 'vacation']
HvacMode = Literal['off', 'heat', 'cool', 'auto']


class LightState(Row):
    kind: Literal['light']
    on: bool
    brightness: int = Field(ge=1, le=100)
    color_temp_k: int = Field(ge=2200, le=6500)


class ThermostatState(Row):
    kind: Literal['thermostat']
    hvac_mode: HvacMode
    target_c: float
    current_c: float


class LockState(Row):
    kind: Literal['lock']
    locked: bool
    jammed: bool


class BlindState(Row):
    kind: Literal['blind']
    position: int = Field(ge=0, le=100)


class PlugState(Row):
    kind: Literal['plug']
    on: bool
    watts: float = Field(ge=0)


class Home(Row):
    name: str
    owner: str
    mode: HomeMode
    access_code: str
    eco_target_c: float


class Room(Row):
    home_id: str
    name: str
    floor: int


class Device(Row):
    home_id: str
    room_id: str
    name: str
    online: bool
    battery_pct: int | None = Field(ge=0, le=100)
    state: LightState | ThermostatState | LockState | BlindState | PlugState = Field(discriminator='kind')


class SceneStep(Row):
    device_id: str
    on: bool | None
    brightness: int | None
    color_temp_k: int | None
    hvac_mode: HvacMode | None
    target_c: float | None
    position: int | None


class Scene(Row):
    home_id: str
    name: str
    steps: list[SceneStep]
    last_run: str | None


class Event(Row):
    home_id: str
    device_id: str | None
    at: str
    kind: Literal['state_change', 'locked', 'unlocked', 'scene', 'mode', 'offline', 'online', 'low_battery']
    source: Literal['app', 'assistant', 'scene', 'schedule', 'keypad', 'hub']
    detail: str


SETTINGS = {'light': ('on', 'brightness', 'color_temp_k'), 'thermostat': ('hvac_mode', 'target_c'), 'blind': ('position',), 'plug': ('on',)}


class SmartHomeTools(Toolkit):
    tables = {'homes': Home, 'rooms': Room, 'devices': Device, 'scenes': Scene, 'events': Event}

    def _log(self, home_id: str, device_id: str | None, kind: str, source: str, detail: str) -> str:
        eid = self.next_id('events', 'E')
        self.db.events[eid] = {'home_id': home_id, 'device_id': device_id, 'at': self.now().isoformat(timespec='seconds'),
                               'kind': kind, 'source': source, 'detail': detail}
        return eid

    def _devices(self, home_id: str, kind: str | None = None) -> list[tuple[str, dict]]:
        return [(k, d) for k, d in sorted(self.db.devices.items()) if d['home_id'] == home_id and (kind is None or d['state']['kind'] == kind)]

    def _apply(self, state: dict, changes: dict) -> list[str]:
        "Apply validated `changes` to a device state; the descriptions of what actually changed."
        done = []
        for f, v in changes.items():
            if v is not None and state[f] != v:
                done.append(f'{f} {state[f]} -> {v}'); state[f] = v
        return done

    @read_tool
    def find_homes(self, query: str) -> list[dict]:
        """Find homes on the hub by words in the home's name or the owner's name.

        Args:
            query: words to look for in the home name or owner name (case-insensitive)
        """
        words = query.lower().split()
        return [{'home_id': k, 'name': h['name'], 'owner': h['owner'], 'mode': h['mode']} for k, h in sorted(self.db.homes.items())
                if all(w in f"{h['name']} {h['owner']}".lower() for w in words)][:10]

    @read_tool
    def get_home_overview(self, home_id: str) -> dict:
        """A home's mode, rooms (with device counts), scenes and alerts: unlocked or jammed locks, offline devices
        and low batteries. The access code is never shown.

        Args:
            home_id: the home's id, e.g. 'H0007'
        """
        h = self.row('homes', home_id, 'home')
        devices = self._devices(home_id)
        rooms = [{'room_id': k, 'name': r['name'], 'floor': r['floor'], 'devices': sum(1 for _, d in devices if d['room_id'] == k)}
                 for k, r in sorted(self.db.rooms.items()) if r['home_id'] == home_id]
        locks = [(k, d) for k, d in devices if d['state']['kind'] == 'lock']
        return {'home_id': home_id, 'name': h['name'], 'owner': h['owner'], 'mode': h['mode'], 'eco_target_c': h['eco_target_c'], 'rooms': rooms,
                'scenes': [{'scene_id': k, 'name': s['name'], 'last_run': s['last_run']} for k, s in sorted(self.db.scenes.items()) if s['home_id'] == home_id],
                'unlocked_locks': [{'device_id': k, 'name': d['name']} for k, d in locks if not d['state']['locked']],
                'jammed_locks': [{'device_id': k, 'name': d['name']} for k, d in locks if d['state']['jammed']],
                'offline_devices': [{'device_id': k, 'name': d['name']} for k, d in devices if not d['online']],
                'low_battery': [{'device_id': k, 'name': d['name'], 'battery_pct': d['battery_pct']} for k, d in devices
                                if d['battery_pct'] is not None and d['battery_pct'] < LOW_BATTERY]}

    @read_tool
    def list_home_devices(self, home_id: str, room_id: str | None = None, kind: Literal['light', 'thermostat', 'lock', 'blind', 'plug'] | None = None) -> list[dict]:
        """The devices of a home with their current state, optionally only one room or one kind of device.

        Args:
            home_id: the home's id
            room_id: only devices in this room, e.g. 'R00031'
            kind: only devices of this kind
        """
        self.row('homes', home_id, 'home')
        if room_id is not None and self.row('rooms', room_id, 'room')['home_id'] != home_id: raise ToolFailure(f'room {room_id} is not in home {home_id}')
        return [{'device_id': k, 'room': self.db.rooms[d['room_id']]['name'], **d} for k, d in self._devices(home_id, kind)
                if room_id is None or d['room_id'] == room_id]

    @read_tool
    def read_event_log(self, home_id: str, device_id: str | None = None, limit: int = 20) -> list[dict]:
        """A home's event log, newest first, optionally only the events of one device.

        Args:
            home_id: the home's id
            device_id: only events of this device
            limit: at most this many events (1-100)
        """
        self.row('homes', home_id, 'home')
        if not 1 <= limit <= 100: raise ToolFailure('limit must be between 1 and 100')
        rows = [{'event_id': k, **e} for k, e in sorted(self.db.events.items(), reverse=True)
                if e['home_id'] == home_id and (device_id is None or e['device_id'] == device_id)]
        return rows[:limit]

    @write_tool('devices', 'events')
    def adjust_device(self, device_id: str, on: bool | None = None, brightness: int | None = None, color_temp_k: int | None = None,
                      hvac_mode: HvacMode | None = None, target_c: float | None = None, position: int | None = None) -> dict:
        """Change a light, thermostat, blind or smart plug. Only settings that fit the device kind are accepted:
        lights take on/brightness (1-100)/color_temp_k (2200-6500), thermostats hvac_mode/target_c (7-30, in 0.5 steps),
        blinds position (0 closed - 100 open), plugs on. Locks are operated with operate_lock. Offline devices cannot be changed.

        Args:
            device_id: the device's id, e.g. 'D00123'
            on: switch a light or plug on (true) or off (false)
            brightness: light brightness in percent, 1-100; setting it switches the light on
            color_temp_k: light colour temperature in kelvin, 2200-6500
            hvac_mode: thermostat mode: off, heat, cool or auto
            target_c: thermostat target temperature in degrees Celsius
            position: blind position in percent open, 0-100
        """
        d = self.row('devices', device_id, 'device')
        kind = d['state']['kind']
        if kind == 'lock': raise ToolFailure(f'{device_id} is a door lock; use operate_lock')
        given = {k: v for k, v in dict(on=on, brightness=brightness, color_temp_k=color_temp_k, hvac_mode=hvac_mode, target_c=target_c, position=position).items() if v is not None}
        if not given: raise ToolFailure('give at least one setting to change')
        wrong = sorted(set(given) - set(SETTINGS[kind]))
        if wrong: raise ToolFailure(f'{kind} {device_id} has no setting {", ".join(wrong)}; it accepts {", ".join(SETTINGS[kind])}')
        if not d['online']: raise ToolFailure(f"{d['name']} ({device_id}) is offline and cannot be changed")
        if brightness is not None:
            if not 1 <= brightness <= 100: raise ToolFailure('brightness must be between 1 and 100 (switch the light off with on=false)')
            if on is False: raise ToolFailure('cannot set a brightness and switch the light off at once')
            given['on'] = True
        if color_temp_k is not None and not 2200 <= color_temp_k <= 6500: raise ToolFailure('color_temp_k must be between 2200 and 6500')
        if target_c is not None:
            if not MIN_TARGET_C <= target_c <= MAX_TARGET_C: raise ToolFailure(f'target_c must be between {MIN_TARGET_C} and {MAX_TARGET_C}')
            if target_c * 2 != int(target_c * 2): raise ToolFailure('target_c must be in steps of 0.5 degrees')
            given['target_c'] = float(target_c)
        if position is not None and not 0 <= position <= 100: raise ToolFailure('position must be between 0 and 100')
        changed = self._apply(d['state'], given)
        if not changed: raise ToolFailure(f"{d['name']} ({device_id}) is already in that state")
        self._log(d['home_id'], device_id, 'state_change', 'assistant', '; '.join(changed))
        return {'device_id': device_id, 'name': d['name'], 'changed': changed, 'state': dict(d['state'])}

    @write_tool('devices', 'events')
    def operate_lock(self, device_id: str, action: Literal['lock', 'unlock'], access_code: str | None = None) -> dict:
        """Lock or unlock a door lock. Unlocking needs the home's access code. Offline or jammed locks and locks with a
        battery below 5% cannot be operated remotely.

        Args:
            device_id: the lock's device id
            action: 'lock' or 'unlock'
            access_code: the home's 4-digit access code; required to unlock
        """
        d = self.row('devices', device_id, 'device')
        s = d['state']
        if s['kind'] != 'lock': raise ToolFailure(f"{device_id} is a {s['kind']}, not a lock")
        if not d['online']: raise ToolFailure(f"{d['name']} ({device_id}) is offline")
        if s['jammed']: raise ToolFailure(f"{d['name']} ({device_id}) is jammed; it must be cleared at the door")
        if d['battery_pct'] is not None and d['battery_pct'] < MIN_LOCK_BATTERY: raise ToolFailure(f"{d['name']} battery is at {d['battery_pct']}%; replace the batteries first")
        want = action == 'lock'
        if s['locked'] == want: raise ToolFailure(f"{d['name']} ({device_id}) is already {action}ed")
        if not want:
            if access_code is None: raise ToolFailure('unlocking needs the home access code')
            if access_code != self.db.homes[d['home_id']]['access_code']: raise ToolFailure('the access code is not correct')
        s['locked'] = want
        self._log(d['home_id'], device_id, 'locked' if want else 'unlocked', 'assistant', f"{d['name']} {action}ed remotely")
        return {'device_id': device_id, 'name': d['name'], 'locked': want}

    @write_tool('homes', 'devices', 'events')
    def set_home_mode(self, home_id: str, mode: HomeMode, access_code: str) -> dict:
        """Switch a home's security mode. away, night and vacation need every online door lock locked first.
        Switching to away, night or vacation turns all lights off; away and vacation also lower heating thermostats
        to the home's eco temperature, and vacation closes all blinds.

        Args:
            home_id: the home's id
            mode: the new mode: home, away, night or vacation
            access_code: the home's 4-digit access code
        """
        h = self.row('homes', home_id, 'home')
        if access_code != h['access_code']: raise ToolFailure('the access code is not correct')
        if h['mode'] == mode: raise ToolFailure(f'home {home_id} is already in {mode} mode')
        if mode in SECURE_MODES:
            open_locks = [d['name'] for _, d in self._devices(home_id, 'lock') if d['online'] and not d['state']['locked']]
            if open_locks: raise ToolFailure(f"cannot switch to {mode}: unlocked doors: {', '.join(open_locks)}")
        changed = []
        for k, d in self._devices(home_id):
            if not d['online'] or mode == 'home': continue
            s = d['state']
            if s['kind'] == 'light' and s['on']: s['on'] = False; changed.append(k)
            elif s['kind'] == 'thermostat' and mode != 'night' and s['hvac_mode'] in ('heat', 'auto') and s['target_c'] > h['eco_target_c']:
                s['target_c'] = h['eco_target_c']; changed.append(k)
            elif s['kind'] == 'blind' and mode == 'vacation' and s['position'] > 0: s['position'] = 0; changed.append(k)
        previous, h['mode'] = h['mode'], mode
        self._log(home_id, None, 'mode', 'assistant', f'{previous} -> {mode}; {len(changed)} devices adjusted')
        return {'home_id': home_id, 'mode': mode, 'previous_mode': previous, 'devices_adjusted': changed}

    @write_tool('devices', 'scenes', 'events')
    def activate_scene(self, scene_id: str) -> dict:
        """Run a saved scene: set each of its devices to the saved settings. Offline devices are skipped. Scenes do not
        run while the home is in away or vacation mode.

        Args:
            scene_id: the scene's id, e.g. 'S00012'
        """
        sc = self.row('scenes', scene_id, 'scene')
        h = self.db.homes[sc['home_id']]
        if h['mode'] in ('away', 'vacation'): raise ToolFailure(f"home {sc['home_id']} is in {h['mode']} mode; switch it to home mode before running scenes")
        changed, skipped = [], []
        for step in sc['steps']:
            d = self.db.devices.get(step['device_id'])
            if d is None or not d['online']: skipped.append(step['device_id']); continue
            if self._apply(d['state'], {f: step[f] for f in SETTINGS[d['state']['kind']]}): changed.append(step['device_id'])
        sc['last_run'] = self.now().isoformat(timespec='seconds')
        self._log(sc['home_id'], None, 'scene', 'assistant', f"scene '{sc['name']}' ran: {len(changed)} changed, {len(skipped)} skipped")
        return {'scene_id': scene_id, 'name': sc['name'], 'changed': changed, 'skipped_offline': skipped}

    @write_tool('scenes')
    def capture_scene(self, room_id: str, name: str) -> dict:
        """Save the current settings of a room's online lights, thermostats, blinds and plugs as a new scene of its home
        (locks are never part of a scene). Scene names are unique within a home; a home has at most 12 scenes.

        Args:
            room_id: the room whose devices are captured
            name: the new scene's name, e.g. 'Reading'
        """
        room = self.row('rooms', room_id, 'room')
        home_id, name = room['home_id'], name.strip()
        if not name: raise ToolFailure('the scene needs a name')
        scenes = [s for s in self.db.scenes.values() if s['home_id'] == home_id]
        if any(s['name'].lower() == name.lower() for s in scenes): raise ToolFailure(f'home {home_id} already has a scene named {name!r}')
        if len(scenes) >= MAX_SCENES_PER_HOME: raise ToolFailure(f'home {home_id} already has {MAX_SCENES_PER_HOME} scenes')
        steps = []
        for k, d in self._devices(home_id):
            s = d['state']
            if d['room_id'] != room_id or not d['online'] or s['kind'] == 'lock': continue
            steps.append({'device_id': k, **{f: s[f] if f in SETTINGS[s['kind']] else None for f in ('on', 'brightness', 'color_temp_k', 'hvac_mode', 'target_c', 'position')}})
        if not steps: raise ToolFailure(f"room {room_id} has no online devices a scene can hold")
        scene_id = self.next_id('scenes', 'S')
        self.db.scenes[scene_id] = {'home_id': home_id, 'name': name, 'steps': steps, 'last_run': None}
        return {'scene_id': scene_id, 'name': name, 'devices': [s['device_id'] for s in steps]}
