package porago

// Steering is how `auto` chose a device's method for one slot (mining.md): what it saw, what it
// forecast and, after the slot, the hit ratio it measured. nil when the method was given
// (Options.Method). The same object as the "steering" key of `pora mine --json`.
type Steering struct {
	// Slot of the session the decision was made for (0-based).
	Slot uint64 `json:"slot"`
	// CachedFraction is the share of the device's shards in the page cache when the slot
	// started; CachedFractionMeasured is false where the OS does not tell (the model's estimate).
	CachedFraction         float64 `json:"cachedFraction"`
	CachedFractionMeasured bool    `json:"cachedFractionMeasured"`
	// CacheableFraction is the share the page cache can hold (memory over the shards' size,
	// at most 1); nil where memory is not known.
	CacheableFraction *float64 `json:"cacheableFraction"`
	MemAvailableBytes *uint64  `json:"memAvailableBytes"`
	CgroupLimitBytes  *uint64  `json:"cgroupLimitBytes"`
	CacheRoomBytes    *uint64  `json:"cacheRoomBytes"`
	// The chosen method's forecast for this slot and once the page cache has settled.
	PredictedMiningPower       float64 `json:"predictedMiningPower"`
	PredictedSteadyMiningPower float64 `json:"predictedSteadyMiningPower"`
	// HitRatio is the share of the slot's reads the page cache served, measured after it.
	HitRatio *float64 `json:"hitRatio"`
	// Exploring: run on this method only to measure it.
	Exploring bool `json:"exploring"`
	// SwitchedFrom is the previous slot's method when this slot switched.
	SwitchedFrom *string `json:"switchedFrom"`
	// Time spent deciding and switching: the slot's own time, before its workers start.
	DecisionMs float64 `json:"decisionMs"`
	SwitchMs   float64 `json:"switchMs"`
	// Switches and exploring slots of this device so far.
	Switches       uint64 `json:"switches"`
	ExploringSlots uint64 `json:"exploringSlots"`
	// Candidates is every candidate method's forecast.
	Candidates []CandidateForecast `json:"candidates"`
}

// CandidateForecast is one method `auto` weighed for a slot.
type CandidateForecast struct {
	Method                     string  `json:"method"`
	PredictedMiningPower       float64 `json:"predictedMiningPower"`
	PredictedSteadyMiningPower float64 `json:"predictedSteadyMiningPower"`
	DeviceReadsPerSec          float64 `json:"deviceReadsPerSec"`
	// RateSource is "assumed", "profile", "probed" (a short probe before the first slot) or "measured".
	RateSource string `json:"rateSource"`
}
