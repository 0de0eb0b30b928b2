//! One device's tune run, as `pora tune` runs it for each device its shards sit on: the
//! measurement ([`super::tune`]), the prediction for the shards that will share the device, the
//! profile written beside the device's first file (or where asked), and `auto`'s forecast with
//! the measured rates (docs/mining.md).

use super::record::TuneRecord;
use super::search::required_samples_per_sec;
use super::{
    make_profile, steady_outlook, tune, Event, Prediction, TuneError, TuneInput, TuneOutcome,
};
use pora_core::ShardSet;
use pora_mine::profile::ProfileError;
use pora_mine::session::{default_profile_path, FilesOutlook};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// What the prediction and the profile of one device's run ask for, beside the measurement.
#[derive(Clone, Debug)]
pub struct DeviceAsk {
    /// Shards that will share the device when mining.
    pub sharing: usize,
    /// Nonces per slot and slot length, seconds, in the prediction.
    pub nonce_limit: u64,
    pub slot_sec: f64,
    /// Where to write the profile; `None`: beside the device's first file.
    pub profile: Option<PathBuf>,
}

/// One device's tune run: its outcome, prediction and the profile written, if any.
pub struct DeviceTune {
    /// `device vda`, when the shards sit on several devices (set by the caller).
    pub label: Option<String>,
    pub outcome: TuneOutcome,
    pub prediction: Prediction,
    pub written: Option<PathBuf>,
    /// `auto`'s forecast with the measured rates: first slot and steady state.
    pub steady: Option<FilesOutlook>,
}

/// Why a device's run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceTuneError {
    #[error(transparent)]
    Tune(#[from] TuneError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

/// Tunes `input`'s shards (all on one device) and writes their profile beside the first of
/// `files` (or at `ask.profile`); no profile when the run was interrupted or found no arm.
pub fn tune_device(
    input: &TuneInput,
    files: &[PathBuf],
    ask: &DeviceAsk,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(Event),
) -> Result<DeviceTune, DeviceTuneError> {
    let sharing = ask.sharing.max(1);
    let outcome = tune(input, stop, on_event)?;
    let required = required_samples_per_sec(ask.nonce_limit, input.random_checks, ask.slot_sec);
    let prediction = Prediction::new(&outcome, sharing, required);
    let profile_path = ask
        .profile
        .clone()
        .unwrap_or_else(|| default_profile_path(&files[0]));
    let written = match (&outcome.choice, outcome.interrupted) {
        (Some(choice), false) => {
            make_profile(&outcome, choice, &prediction, files).save(&profile_path)?;
            Some(profile_path)
        }
        _ => None,
    };
    let steady = outcome
        .choice
        .as_ref()
        .map(|c| steady_outlook(&outcome, c, files, sharing));
    Ok(DeviceTune {
        label: None,
        outcome,
        prediction,
        written,
        steady,
    })
}

impl DeviceTune {
    /// The run's JSON record.
    pub fn record(&self) -> TuneRecord<'_> {
        TuneRecord::new(
            &self.outcome,
            &self.prediction,
            self.written.as_deref(),
            self.steady.as_ref(),
        )
    }
}

/// `files` that belong to `shards`, in the order given (the profile is written beside the
/// first); all of the shards' files when none was given.
pub fn files_in_given_order(files: &[PathBuf], shards: &[ShardSet]) -> Vec<PathBuf> {
    let theirs: Vec<PathBuf> = shards.iter().flat_map(|s| s.paths()).collect();
    let given: Vec<PathBuf> = files
        .iter()
        .filter(|f| theirs.contains(f))
        .cloned()
        .collect();
    if given.is_empty() {
        theirs
    } else {
        given
    }
}
